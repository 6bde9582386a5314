// did_you_mean (io/yaml_reader.hpp): the nearest known key within typo distance (optimal string alignment distance
// below max(2, |key| / 3) + 1), the first in the set's order on a tie. The bounded comparison it uses must pick what
// the whole distance table picks: checked against a plain table on seeded random keys, and on hand cases.
#include <algorithm>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::did_you_mean_test {

using spec::did_you_mean;

// The textbook table, for reference.
size_t osa_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string reference(const std::string& key, const std::set<std::string>& known) {
  if (key.size() > 64) return "";
  std::string best;
  size_t best_d = std::max<size_t>(2, key.size() / 3) + 1;
  for (const std::string& k : known) {
    if (k.size() > 64) continue;
    const size_t d = osa_distance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

TEST(DidYouMean, HandCases) {
  const std::set<std::string> flags = {"--num-layers", "--sequence-parallel", "--hidden-size", "--num-query-groups"};
  EXPECT_EQ(did_you_mean("--num-layer", flags), "--num-layers");               // one deletion
  EXPECT_EQ(did_you_mean("--sequence-paralel", flags), "--sequence-parallel");  // one deletion
  EXPECT_EQ(did_you_mean("--hidden-szie", flags), "--hidden-size");             // one transposition
  EXPECT_EQ(did_you_mean("--vocab-size", flags), "");                            // nothing near
  const std::set<std::string> keys = {"num_query_groups", "num_layers"};
  EXPECT_EQ(did_you_mean("num_kv_heads", keys), "");
  EXPECT_EQ(did_you_mean("num_layres", keys), "num_layers");
}

TEST(DidYouMean, TheBoundedComparisonPicksWhatTheWholeTablePicks) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab-_c";
  auto word = [&](size_t lo, size_t hi) {
    std::string s(std::uniform_int_distribution<size_t>(lo, hi)(rng), 'a');
    for (char& c : s) c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    return s;
  };
  int suggested = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::set<std::string> known;
    for (int i = 0; i < 20; ++i) known.insert(word(1, 14));
    // Half the keys are a known one with up to four random edits: distances near the limit, where stopping early
    // could go wrong.
    std::string key = word(0, 14);
    if (trial % 2) {
      key = *std::next(known.begin(), std::uniform_int_distribution<int>(0, static_cast<int>(known.size()) - 1)(rng));
      for (int e = std::uniform_int_distribution<int>(1, 4)(rng); e > 0; --e) {
        const size_t at = std::uniform_int_distribution<size_t>(0, key.size())(rng);
        const char c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
        switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
          case 0: key.insert(key.begin() + static_cast<long>(at), c); break;
          case 1: if (at < key.size()) key.erase(at, 1); break;
          case 2: if (at < key.size()) key[at] = c; break;
          default: if (at + 1 < key.size()) std::swap(key[at], key[at + 1]); break;
        }
      }
    }
    const std::string want = reference(key, known);
    suggested += !want.empty();
    ASSERT_EQ(did_you_mean(key, known), want) << "key '" << key << "'";
  }
  EXPECT_GT(suggested, 200);  // the cases exercise suggestions, not only refusals
}

}  // namespace stepsim::did_you_mean_test

#include "stepsim/catalog/gpu_name.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <set>
#include <string_view>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::hw {
namespace {

// A name cut into what it says. Words are lower case; separators are ' ', '-', '_', ',' and '/'.
struct NameParts {
  std::string model;           // the model words joined: "h100", "rtx3090", "gb200"
  std::string form;            // "sxm", "pcie", "nvl" or ""
  std::optional<double> memory_GiB;
  std::optional<double> power_W;
  std::string memory_kind;     // "hbm2e", "hbm3", ... as written
  std::string described;       // the text of parentheses: the system, not the part
};

bool number_with_suffix(const std::string& w, std::initializer_list<std::string_view> suffixes, double& value) {
  size_t i = 0;
  while (i < w.size() && (std::isdigit(static_cast<unsigned char>(w[i])) || w[i] == '.')) ++i;
  const std::string_view suffix = std::string_view(w).substr(i);
  if (i == 0 || std::find(suffixes.begin(), suffixes.end(), suffix) == suffixes.end()) return false;
  return spec::parse_double(w.substr(0, i), value) && value > 0;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text) {
    if (c == ' ' || c == '-' || c == '_' || c == ',' || c == '/' || c == '\t') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  if (!w.empty()) words.push_back(w);
  return words;
}

NameParts parts_of(const std::string& text) {
  NameParts p;
  std::string outside;  // the text without its parentheses
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    else if (c == ')') depth = depth > 0 ? depth - 1 : 0;
    else if (depth > 0) p.described.push_back(c);
    else outside.push_back(c);
  }
  static const std::set<std::string> vendor{"nvidia", "tesla", "geforce", "hgx", "dgx"};
  double v = 0;
  bool system_words = false;
  for (const std::string& w : words_of(p.described)) {
    if (number_with_suffix(w, {"w"}, v)) p.power_W = v;  // "H100-SXM5-80GB (700W)": the part's power all the same
    else system_words = true;
  }
  if (!system_words) p.described.clear();
  for (const std::string& w : words_of(outside)) {
    if (number_with_suffix(w, {"w"}, v)) p.power_W = v;
    else if (number_with_suffix(w, {"gb", "gib", "g"}, v)) p.memory_GiB = v;
    else if (w.rfind("hbm", 0) == 0) p.memory_kind = w;
    else if (w.rfind("sxm", 0) == 0) p.form = "sxm";
    else if (w == "pcie") p.form = "pcie";
    else if (w == "nvl") p.form = "nvl";
    else if (w.size() > 3 && w.rfind("nvl", 0) == 0 && std::isdigit(static_cast<unsigned char>(w[3]))) continue;  // NVL72: a rack
    else if (!vendor.count(w)) p.model += w;
  }
  return p;
}

double memory_GiB_of(const GpuSpec& g) { return static_cast<double>(g.memory_bytes) / 1073741824.0; }

bool matches(const GpuSpec& g, const GpuNameKeys& e, const NameParts& q) {
  if (!e.models.count(q.model)) return false;
  if (!q.form.empty() && !e.forms.empty() && !e.forms.count(q.form)) return false;
  return !q.memory_GiB || std::fabs(*q.memory_GiB - memory_GiB_of(g)) <= 1.0;
}

std::string describe(const GpuSpec& g) {
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.0f GiB", memory_GiB_of(g));
  const GpuNameKeys e = name_keys_of(g);
  std::string s = g.name + " (" + mem;
  for (const std::string& f : e.forms) s += ", " + std::string(f == "sxm" ? "SXM" : f == "pcie" ? "PCIe" : "NVL");
  return s + ")";
}

std::string list_of(const std::vector<const GpuSpec*>& gpus) {
  std::string s;
  for (const GpuSpec* g : gpus) s += (s.empty() ? "" : ", ") + describe(*g);
  return s;
}

std::string all_names(const GpuCatalog& catalog) {
  std::string s;
  for (const GpuSpec& g : catalog.gpus()) s += (s.empty() ? "" : ", ") + g.name;
  return s;
}

// The catalog GPU a bare model name means ("H100" -> H100-SXM): the one that lists the bare name as its name or alias.
const GpuSpec* plain_name_gpu(const std::vector<const GpuSpec*>& candidates, const std::string& model) {
  auto is_bare = [&](const std::string& label) { return words_of(label).size() == 1 && parts_of(label).model == model; };
  for (const GpuSpec* g : candidates) {
    if (is_bare(g->name) || std::any_of(g->aliases.begin(), g->aliases.end(), is_bare)) return g;
  }
  return nullptr;
}

}  // namespace

GpuNameKeys name_keys_of(const GpuSpec& g) {
  GpuNameKeys e;
  auto add = [&](const std::string& label) {
    const NameParts p = parts_of(label);
    if (!p.model.empty()) e.models.insert(p.model);
    if (!p.form.empty()) e.forms.insert(p.form);
  };
  add(g.name);
  for (const std::string& a : g.aliases) add(a);
  return e;
}

ResolvedGpu resolve_gpu_name(const GpuCatalog& catalog, const std::string& text) {
  const NameParts q = parts_of(text);
  ResolvedGpu r;
  r.power_limit_W = q.power_W;
  // The catalog's own name, as most jobs write it: that GPU, with nothing to say (the search below would find it too,
  // after reading every entry's names and aliases).
  if (const GpuSpec* own = catalog.try_find(text); own && own->name == text && !q.power_W && q.described.empty()) {
    r.gpu = own;
    return r;
  }
  std::vector<const GpuSpec*> same_model, candidates;
  for (size_t i = 0; i < catalog.gpus().size(); ++i) {
    const GpuSpec& g = catalog.gpus()[i];
    const GpuNameKeys& e = catalog.name_keys(i);
    if (e.models.count(q.model)) same_model.push_back(&g);
    if (!q.model.empty() && matches(g, e, q)) candidates.push_back(&g);
  }
  // A name or alias written out in full is the catalog's own answer; an alias that is the bare model ("A100") is
  // said when the catalog has other GPUs of that model.
  const std::string outside = text.substr(0, text.find('('));
  if (const GpuSpec* exact = catalog.try_find(outside)) {
    if (words_of(outside) != words_of(exact->name) && !q.memory_GiB && q.form.empty() && same_model.size() > 1) {
      std::vector<const GpuSpec*> others;
      for (const GpuSpec* g : same_model)
        if (g != exact) others.push_back(g);
      r.notes.push_back("GPU '" + text + "': memory and form factor not stated, read as " + describe(*exact) +
                        "; the catalog's other " + q.model + " GPUs are " + list_of(others));
    }
    candidates = {exact};
  }
  if (candidates.empty()) {
    if (same_model.empty()) {
      throw InputError("key cluster.gpu: unknown GPU '" + text + "'; known: " + all_names(catalog));
    }
    throw InputError("key cluster.gpu: unknown GPU '" + text + "': no catalog GPU of model " + q.model +
                     " has what the name says; the catalog's are " + list_of(same_model) +
                     " (add a variant to data/gpus.yaml, or write one of these)");
  }
  if (candidates.size() > 1) {
    const GpuSpec* plain = plain_name_gpu(candidates, q.model);
    if (!plain) {
      throw InputError("key cluster.gpu: GPU '" + text + "' matches several catalog GPUs: " + list_of(candidates) +
                       "; write the form factor (SXM, PCIe, NVL) or the memory to choose one");
    }
    std::vector<const GpuSpec*> others;
    for (const GpuSpec* g : candidates)
      if (g != plain) others.push_back(g);
    r.notes.push_back("GPU '" + text + "': " + std::string(q.form.empty() ? "form factor" : "memory") +
                      " not stated, read as " + describe(*plain) + "; the name also fits " + list_of(others));
    candidates = {plain};
  }
  r.gpu = candidates.front();
  if (r.power_limit_W) {
    char w[32];
    std::snprintf(w, sizeof w, "%.0f W", *r.power_limit_W);
    r.notes.push_back("GPU '" + text + "': " + w + " read as the GPU's power limit");
  }
  if (!q.described.empty()) r.notes.push_back("GPU '" + text + "': '(" + q.described + ")' read as the system's description");
  return r;
}

}  // namespace stepsim::hw

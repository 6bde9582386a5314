#pragma once
// EventQueue: min-priority queue of (time, sequence) events for the engine, a 4-ary heap of 16-byte
// entries (the engine's hot spot: shallower than a binary heap and cache-friendly). The sequence number
// is taken at push, so equal times pop in push order: runs are bit-identical.
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace stepsim::sim {

class EventQueue {
 public:
  static constexpr int kRankBits = 21;    // up to 2,097,152 ranks
  static constexpr int kStreamBits = 4;   // up to 16 streams (and the collective-done tag)
  static constexpr int kSeqBits = 64 - kRankBits - kStreamBits;

  struct Entry {
    int64_t t;
    uint64_t key;  // seq << (rank+stream bits) | rank << stream bits | stream
  };

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  // Returns the entry's key, unique per push (the engine uses it to recognise superseded events).
  uint64_t push(int64_t t, int rank, int stream) {
    if (seq_ >> kSeqBits) throw std::runtime_error("event queue: sequence overflow");
    const uint64_t key = (seq_++ << (kRankBits + kStreamBits)) | (static_cast<uint64_t>(rank) << kStreamBits) |
                         static_cast<uint64_t>(stream);
    heap_.push_back(Entry{t, key});
    sift_up(heap_.size() - 1);
    return key;
  }

  int64_t top_time() const { return heap_.front().t; }

  // Removes the earliest event.
  Entry pop() {
    const Entry top = heap_.front();
    const Entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return top;
  }

  static int rank_of(const Entry& e) { return static_cast<int>((e.key >> kStreamBits) & ((1u << kRankBits) - 1)); }
  static int stream_of(const Entry& e) { return static_cast<int>(e.key & ((1u << kStreamBits) - 1)); }

 private:
  static bool less(const Entry& a, const Entry& b) { return a.t != b.t ? a.t < b.t : a.key < b.key; }

  void sift_up(size_t i) {
    const Entry e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!less(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  // Places `e` starting from the root.
  void sift_down(const Entry& e) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      const size_t end = c + 4 < n ? c + 4 : n;
      for (size_t j = c + 1; j < end; ++j) {
        if (less(heap_[j], heap_[best])) best = j;
      }
      if (!less(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Entry> heap_;
  uint64_t seq_ = 0;
};

}  // namespace stepsim::sim

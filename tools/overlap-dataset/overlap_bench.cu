// overlap_bench: measures how much slower compute kernels run while a communication kernel shares the GPU, and
// writes stepsim's overlap-slowdown dataset CSV (docs/SLOWDOWN-MODEL.md). Each compute kernel is timed alone, then
// beside a communication kernel of every (collective, size, channels) setting: the proxy of comm_proxy.cuh on one
// GPU, or real NCCL collectives across every visible GPU with --nccl. Times are medians of --reps cudaEvent timings;
// slowdown = overlapped / isolated - 1. README.md in this folder says how to run it and how to add Nsight Compute
// metrics. The Nsight Compute columns are left empty here.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm_proxy.cuh"
#include "compute_kernels.cuh"
#include "cuda_check.cuh"
#include "nccl_comm.cuh"

namespace overlap_bench {
namespace {

struct Options {
  std::string gpu, out = "overlap.csv";
  int reps = 20, warmup = 3, ranks = 8;
  double link_GBps = 200;
  std::vector<size_t> sizes = {size_t{4} << 20, size_t{16} << 20, size_t{64} << 20, size_t{256} << 20};
  std::vector<int> channels = {2, 4, 8, 16, 32};
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter"};
  std::vector<std::string> protocols = {"LL", "LL128", "Simple"};  // --nccl only
  bool nccl = false, profile_only = false;
};

const char* kUsage =
    "usage: overlap_bench [--out FILE.csv] [--gpu NAME] [--reps N] [--sizes 4M,16M,...] [--channels 2,4,...]\n"
    "                     [--collectives all_reduce,all_gather,reduce_scatter] [--ranks N] [--link-GBps X]\n"
    "                     [--nccl [--protocols LL,LL128,Simple]] [--profile-only]\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "overlap_bench: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

size_t parse_size(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  double mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1 << 10, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1 << 20, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1 << 30, ++end;
  if (*end || !(v > 0) || v * mult > 4.0 * (1 << 30)) usage("--sizes: '" + s + "' is not a size up to 4G");
  return static_cast<size_t>(v * mult);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto positive = [&](const std::string& v) {
      const int x = std::atoi(v.c_str());
      if (x < 1) usage(a + ": '" + v + "' is not a positive integer");
      return x;
    };
    if (a == "--out") o.out = value();
    else if (a == "--gpu") o.gpu = value();
    else if (a == "--reps") o.reps = positive(value());
    else if (a == "--ranks") o.ranks = std::max(2, positive(value()));
    else if (a == "--link-GBps") {
      o.link_GBps = std::atof(value().c_str());
      if (!(o.link_GBps > 0)) usage("--link-GBps must be positive");
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (const auto& s : split(value())) o.sizes.push_back(parse_size(s));
    } else if (a == "--channels") {
      o.channels.clear();
      for (const auto& s : split(value())) o.channels.push_back(positive(s));
    } else if (a == "--collectives") {
      o.collectives = split(value());
      for (const auto& c : o.collectives) {
        if (c != "all_reduce" && c != "all_gather" && c != "reduce_scatter") usage("--collectives: '" + c + "'");
      }
    } else if (a == "--protocols") o.protocols = split(value());
    else if (a == "--nccl") o.nccl = true;
    else if (a == "--profile-only") o.profile_only = true;
    else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else usage("unknown argument '" + a + "'");
  }
  if (o.sizes.empty() || o.channels.empty() || o.collectives.empty()) usage("empty list");
  return o;
}

// Bytes this GPU moves through HBM for one ring collective of nccl-tests size S on `ranks` GPUs.
double ring_traffic(const std::string& coll, size_t bytes, int ranks) {
  const double n = ranks;
  return (coll == "all_reduce" ? 2 * (n - 1) / n : (n - 1) / n) * static_cast<double>(bytes);
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5f * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Timer {
  cudaEvent_t start, stop, comm_end;
  Timer() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventCreate(&comm_end));
  }
  float ms(cudaEvent_t a, cudaEvent_t b) const {
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    return t;
  }
};

float isolated_ms(const ComputeCase& c, cudaStream_t s, const Options& o, Timer& t) {
  std::vector<float> v;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    CUDA_CHECK(cudaEventRecord(t.start, s));
    c.launch(s);
    CUDA_CHECK(cudaEventRecord(t.stop, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (r >= o.warmup) v.push_back(t.ms(t.start, t.stop));
  }
  return median(v);
}

struct Row {
  std::string kernel, kernel_type, collective, algorithm, protocol, source;
  double isolated_us, slowdown;
  size_t bytes;
  int channels;
};

void write_csv(const Options& o, const std::vector<Row>& rows) {
  FILE* f = std::fopen(o.out.c_str(), "w");
  if (!f) fail(("cannot write " + o.out).c_str());
  std::fprintf(f, "# overlap_bench: %s, link %.0f GB/s, ring of %d ranks, median of %d reps\n", o.gpu.c_str(),
               o.link_GBps, o.ranks, o.reps);
  std::fprintf(f, "gpu,kernel,kernel_type,isolated_us,sm_throughput_pct,memory_throughput_pct,dram_throughput_pct,"
                  "achieved_occupancy_pct,l1_hit_rate_pct,l2_hit_rate_pct,collective,algorithm,protocol,bucket_bytes,"
                  "channels,slowdown,source\n");
  for (const Row& r : rows) {
    std::fprintf(f, "\"%s\",%s,%s,%.3f,,,,,,,%s,%s,%s,%zu,%d,%.5f,%s\n", o.gpu.c_str(), r.kernel.c_str(),
                 r.kernel_type.c_str(), r.isolated_us, r.collective.c_str(), r.algorithm.c_str(), r.protocol.c_str(),
                 r.bytes, r.channels, r.slowdown, r.source.c_str());
  }
  std::fclose(f);
}

// One compute case beside the proxy: median overlapped time, with the proxy repeated so that it outlasts the
// compute kernel (checked per repetition; a repetition it did not cover is retried with twice the repeats).
float proxy_overlapped_ms(const ComputeCase& c, float iso_ms, const std::string& coll, size_t bytes, int channels,
                          const Options& o, cudaStream_t compute, cudaStream_t comm, Timer& t, float4* src, float4* dst,
                          int* flags) {
  const double traffic = ring_traffic(coll, bytes, o.ranks);
  const double per_rep_ms = traffic / (o.link_GBps * 1e6);
  int repeat = std::max(1, static_cast<int>(std::ceil(1.5 * iso_ms / per_rep_ms)) + 1);
  const bool reduce = coll != "all_gather";
  std::vector<float> v;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    CUDA_CHECK(cudaMemsetAsync(flags, 0, 2 * sizeof(int), comm));
    comm_proxy<<<channels, 512, 0, comm>>>(src, dst, static_cast<size_t>(traffic), repeat, reduce,
                                           o.link_GBps / channels, flags);
    CUDA_CHECK(cudaEventRecord(t.comm_end, comm));
    wait_started<<<1, 1, 0, compute>>>(flags, flags + 1);
    CUDA_CHECK(cudaEventRecord(t.start, compute));
    c.launch(compute);
    CUDA_CHECK(cudaEventRecord(t.stop, compute));
    CUDA_CHECK(cudaDeviceSynchronize());
    int timed_out = 0;
    CUDA_CHECK(cudaMemcpy(&timed_out, flags + 1, sizeof(int), cudaMemcpyDeviceToHost));
    if (timed_out) fail("the GPU did not run the proxy and the compute kernel at the same time");
    if (t.ms(t.stop, t.comm_end) < 0) {  // the proxy ended first: not a full overlap
      if (repeat > (1 << 20)) fail("the proxy cannot outlast the compute kernel");
      repeat *= 2;
      --r;
      continue;
    }
    if (r >= o.warmup) v.push_back(t.ms(t.start, t.stop));
  }
  return median(v);
}

int run(const Options& opts) {
  Options o = opts;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (o.gpu.empty()) o.gpu = prop.name;
  for (int& ch : o.channels) ch = std::min(ch, prop.multiProcessorCount / 2);
  ComputeCases cases(prop.multiProcessorCount);
  cudaStream_t compute, comm;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  Timer t;

  if (o.profile_only) {  // one launch per case, named for ncu --print-nvtx-rename kernel
    for (const auto& c : cases.cases()) {
      nvtxRangePushA(c.name.c_str());
      c.launch(compute);
      CUDA_CHECK(cudaStreamSynchronize(compute));
      nvtxRangePop();
    }
    return 0;
  }

  std::vector<Row> rows;
  std::vector<float> iso(cases.cases().size());
  for (size_t i = 0; i < iso.size(); ++i) iso[i] = isolated_ms(cases.cases()[i], compute, o, t);

  int ndev = 1;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (o.nccl) {
#ifdef HAVE_NCCL
    if (ndev < 2) fail("--nccl needs at least two visible GPUs");
    const size_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
    for (const auto& proto : o.protocols) {
      for (int ch : o.channels) {
        NcclRing ring(ndev, max_bytes, proto, ch);
        for (const auto& coll : o.collectives) {
          for (size_t bytes : o.sizes) {
            for (size_t i = 0; i < iso.size(); ++i) {
              const ComputeCase& c = cases.cases()[i];
              // Time one collective alone to size the repetition count, then overlap.
              CUDA_CHECK(cudaEventRecord(t.start, ring.stream0()));
              ring.launch(coll, bytes, 1);
              CUDA_CHECK(cudaEventRecord(t.stop, ring.stream0()));
              ring.sync();
              const int repeat = std::max(1, static_cast<int>(std::ceil(1.5 * iso[i] / t.ms(t.start, t.stop))) + 1);
              std::vector<float> v;
              for (int r = 0; r < o.warmup + o.reps; ++r) {
                ring.launch(coll, bytes, repeat);
                CUDA_CHECK(cudaEventRecord(t.start, compute));
                c.launch(compute);
                CUDA_CHECK(cudaEventRecord(t.stop, compute));
                CUDA_CHECK(cudaStreamSynchronize(compute));
                ring.sync();
                if (r >= o.warmup) v.push_back(t.ms(t.start, t.stop));
              }
              rows.push_back({c.name, c.kernel_type, coll, "ring", proto, "nccl", 1000.0 * iso[i],
                              median(v) / iso[i] - 1, bytes, ch});
            }
          }
        }
      }
    }
#else
    fail("--nccl: built without nccl.h (make NCCL_HOME=...)");
#endif
  } else {
    const size_t max_traffic = 2 * *std::max_element(o.sizes.begin(), o.sizes.end());
    float4 *src = nullptr, *dst = nullptr;
    int* flags = nullptr;
    CUDA_CHECK(cudaMalloc(&src, max_traffic));
    CUDA_CHECK(cudaMalloc(&dst, max_traffic));
    CUDA_CHECK(cudaMalloc(&flags, 2 * sizeof(int)));
    CUDA_CHECK(cudaMemset(src, 0, max_traffic));
    CUDA_CHECK(cudaMemset(dst, 0, max_traffic));
    for (const auto& coll : o.collectives) {
      for (size_t bytes : o.sizes) {
        for (int ch : o.channels) {
          for (size_t i = 0; i < iso.size(); ++i) {
            const ComputeCase& c = cases.cases()[i];
            const float ms = proxy_overlapped_ms(c, iso[i], coll, bytes, ch, o, compute, comm, t, src, dst, flags);
            rows.push_back({c.name, c.kernel_type, coll, "ring", "Simple", "proxy", 1000.0 * iso[i], ms / iso[i] - 1,
                            bytes, ch});
          }
        }
      }
      std::fprintf(stderr, "overlap_bench: %s done (%zu rows)\n", coll.c_str(), rows.size());
    }
    cudaFree(src), cudaFree(dst), cudaFree(flags);
  }
  write_csv(o, rows);
  std::fprintf(stderr, "overlap_bench: wrote %zu rows to %s\n", rows.size(), o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace overlap_bench

int main(int argc, char** argv) { return overlap_bench::run(overlap_bench::parse(argc, argv)); }

// Real NCCL collectives for the collector on a multi-GPU machine (built only when nccl.h is found): one process
// drives every visible GPU (ncclCommInitAll); the compute kernel is timed on GPU 0 while the collective runs on all
// of them. NCCL reads NCCL_PROTO, NCCL_ALGO and NCCL_MIN/MAX_NCHANNELS when a communicator is created, so each
// (protocol, channels) setting gets fresh communicators.
#pragma once
#ifdef HAVE_NCCL
#include <nccl.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_check.cuh"

namespace overlap_bench {

#define NCCL_CHECK(call)                                                                                     \
  do {                                                                                                       \
    const ncclResult_t r_ = (call);                                                                          \
    if (r_ != ncclSuccess) {                                                                                 \
      std::fprintf(stderr, "overlap_bench: %s: %s (%s:%d)\n", #call, ncclGetErrorString(r_), __FILE__, __LINE__); \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

class NcclRing {
 public:
  NcclRing(int ndev, size_t max_bytes, const std::string& protocol, int channels) : ndev_(ndev) {
    setenv("NCCL_PROTO", protocol.c_str(), 1);
    setenv("NCCL_ALGO", "Ring", 1);
    setenv("NCCL_MIN_NCHANNELS", std::to_string(channels).c_str(), 1);
    setenv("NCCL_MAX_NCHANNELS", std::to_string(channels).c_str(), 1);
    comms_.resize(ndev);
    NCCL_CHECK(ncclCommInitAll(comms_.data(), ndev, nullptr));
    for (int d = 0; d < ndev; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      void *s = nullptr, *r = nullptr;
      CUDA_CHECK(cudaMalloc(&s, max_bytes));
      CUDA_CHECK(cudaMalloc(&r, max_bytes));
      cudaStream_t st;
      CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      send_.push_back(s), recv_.push_back(r), streams_.push_back(st);
    }
    CUDA_CHECK(cudaSetDevice(0));
  }
  ~NcclRing() {
    for (int d = 0; d < ndev_; ++d) {
      cudaSetDevice(d);
      cudaStreamSynchronize(streams_[d]);
      ncclCommDestroy(comms_[d]);
      cudaFree(send_[d]), cudaFree(recv_[d]), cudaStreamDestroy(streams_[d]);
    }
    cudaSetDevice(0);
  }
  cudaStream_t stream0() const { return streams_[0]; }

  // `repeat` back-to-back collectives of nccl-tests size `bytes` (bf16 elements) on every GPU.
  void launch(const std::string& collective, size_t bytes, int repeat) {
    const size_t count = bytes / 2;
    for (int r = 0; r < repeat; ++r) {  // one group per repetition: one NCCL kernel each, as in DDP buckets
      NCCL_CHECK(ncclGroupStart());
      for (int d = 0; d < ndev_; ++d) {
        if (collective == "all_gather") {
          NCCL_CHECK(ncclAllGather(send_[d], recv_[d], count / ndev_, ncclBfloat16, comms_[d], streams_[d]));
        } else if (collective == "reduce_scatter") {
          NCCL_CHECK(ncclReduceScatter(send_[d], recv_[d], count / ndev_, ncclBfloat16, ncclSum, comms_[d], streams_[d]));
        } else {
          NCCL_CHECK(ncclAllReduce(send_[d], recv_[d], count, ncclBfloat16, ncclSum, comms_[d], streams_[d]));
        }
      }
      NCCL_CHECK(ncclGroupEnd());
    }
  }
  void sync() {
    for (int d = 0; d < ndev_; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      CUDA_CHECK(cudaStreamSynchronize(streams_[d]));
    }
    CUDA_CHECK(cudaSetDevice(0));
  }

 private:
  int ndev_;
  std::vector<ncclComm_t> comms_;
  std::vector<void*> send_, recv_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace overlap_bench
#endif

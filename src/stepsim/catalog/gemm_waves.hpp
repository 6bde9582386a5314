#pragma once
// GEMM time from tiles and waves (docs/COST-MODELS.md, "GEMM: tiles and waves"). cuBLAS splits the m x n output
// into tiles, one thread block per tile; the GPU runs them in waves of one tile per SM. Each wave costs a full
// tile's main loop over k (at the tensor cores' per-SM rate times an efficiency) plus a fixed prologue/epilogue,
// and the kernel a launch cost; the library's heuristic is taken to pick the fastest tile shape. A partly filled
// last wave costs a whole wave: that is the wave quantization that makes a 4,224-wide GEMM cost as much as a
// 4,352-wide one, and a 256-token expert GEMM cost 5 us, not 0.3.
#include <array>
#include <cstdint>
#include <vector>

namespace stepsim::cost {

struct GemmWaves {
  std::vector<std::array<int32_t, 2>> tiles;  // output tile shapes [rows, columns] the library may choose
  double efficiency = 0;                       // fraction of the per-SM tensor rate inside a tile's main loop
  double wave_overhead_us = 0;                 // per wave: pipeline fill and epilogue (the output's write)
  double launch_us = 0;                        // per kernel
  double group_overhead_us = 0;                // per GEMM of a grouped kernel (each expert's problem set-up)
};

// Seconds of `batch` independent m x n x k GEMMs in one kernel (a grouped GEMM: their tiles share the waves, and
// when `grouped` each GEMM adds group_overhead_us) on a GPU of `sm_count` SMs whose tensor cores reach `peak_flops`
// at the datasheet clock, with the tile efficiency further multiplied by `scale` (precision, grouped kernels,
// sustained clock). Non-decreasing in m, n, k and batch. Dimensions < 1 are taken as 1.
double gemm_wave_seconds(const GemmWaves& w, double m, double n, double k, double batch, double peak_flops,
                         int sm_count, double scale, bool grouped = false);

}  // namespace stepsim::cost

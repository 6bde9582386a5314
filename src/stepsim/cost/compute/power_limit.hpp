#pragma once
// The tensor-core clock a power limit leaves (docs/COST-MODELS.md, "Power limit"). Under a GEMM or attention load the
// board runs at its power limit; dynamic power is ~ f V^2 and across the DVFS range the voltage follows the clock, so
// the clock-dependent power goes as f^3, while a share s of the default power (leakage, HBM, board) does not scale:
//   f(P) / f(TDP) = ((P - s TDP) / ((1 - s) TDP))^(1/3)
// Memory-bound kernels keep their speed (the HBM clock is not lowered), so only the tensor-core rate is scaled.
namespace stepsim::cost {

// The clock at `limit_W` as a fraction of the clock at `tdp_W` (1 when limit_W is 0 or at least tdp_W).
double power_limited_clock(double limit_W, double tdp_W, double static_share);

}  // namespace stepsim::cost

// Which vector instruction sets the CPU kernels may use: those the CPU has, capped by the
// environment variable HAZEFREE_CPU_ISA (baseline or avx2), so that every compiled copy of a
// kernel can be run and tested on one machine. Internal to kernels/cpu.
#pragma once

namespace hazefree::cpu::detail {

enum class CpuIsa { baseline, avx2 };

// True when the CPU has `isa` and HAZEFREE_CPU_ISA (read at each call; unset: no cap) allows it.
// Throws std::invalid_argument, naming the variable and the value, for a value it does not know.
bool cpu_allows(CpuIsa isa);

}  // namespace hazefree::cpu::detail

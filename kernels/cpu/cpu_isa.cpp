#include "kernels/cpu/cpu_isa.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace hazefree::cpu::detail {

namespace {

bool cpu_has(CpuIsa isa) {
#if defined(__GNUC__) && defined(__x86_64__)
  return isa == CpuIsa::baseline || __builtin_cpu_supports("avx2");
#else
  return isa == CpuIsa::baseline;
#endif
}

CpuIsa cap() {
  const char* value = std::getenv("HAZEFREE_CPU_ISA");
  if (value == nullptr || *value == '\0') return CpuIsa::avx2;
  const std::string name(value);
  if (name == "baseline") return CpuIsa::baseline;
  if (name == "avx2") return CpuIsa::avx2;
  throw std::invalid_argument("HAZEFREE_CPU_ISA: '" + name + "' is not baseline or avx2");
}

}  // namespace

bool cpu_allows(CpuIsa isa) { return static_cast<int>(isa) <= static_cast<int>(cap()) && cpu_has(isa); }

}  // namespace hazefree::cpu::detail

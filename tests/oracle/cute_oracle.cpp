// Golden MMA descriptors from CUTLASS/CuTe, built as host C++ (tests only).
//
// Reads one query per line on stdin, prints one answer per line (a hex value,
// or "error <text>"):
//
//   smem <arch 90|100> <major K|MN> <swizzle 0..3> <bits 8|16|32> <order 0|1>
//        <rows> <contig_bytes> <stage> <row0> <col0> <base>
//     A tile of 3 stages, each (rows x contig) with the contiguous dimension
//     contig_bytes wide, built from CuTe's own swizzle atoms (tile_to_shape).
//     K-major: (MN=rows, K=contig); MN-major: (MN=contig, K=rows). order 0
//     repeats atoms along the strided dimension first (CuTe's default for
//     K-major, tilemem's layout for both majors), order 1 along the contiguous
//     dimension first (CuTe's default for MN-major). The descriptor is
//     make_gmma_desc / make_umma_desc of the MMA slice at (stage, row0, col0)
//     in (strided, contiguous) element coordinates of a tile placed at
//     shared-memory byte address <base>; the slice is 32 bytes of K by the
//     whole MN extent (MN-major) or 64 rows of MN (K-major).
//
//   saddr <same fields as smem>
//     The shared-memory byte address of every element of that MMA slice, as CuTe's
//     swizzled smem tensor places it (&slice(mn, k): the swizzle acts on the absolute
//     address), MN index outer, K inner, space-separated on one line.
//
//   instr <kind> <a> <b> <d> <a_major> <b_major> <m> <n> <neg_a> <neg_b> <sat>
//     make_instr_desc (dense kinds), printed through make_runtime_instr_desc
//     (the descriptor sits in the upper 32 bits).
//
//   bs <kind> <a> <b> <sf> <a_major> <b_major> <m> <n> <sfa_taddr> <sfb_taddr>
//     make_runtime_instr_desc_block_scaled with the scale factors' TMEM
//     addresses (their bits 30-31 select the scale-factor ids).
//
// On the host CuTe turns every shared-memory pointer into address 0; its hook
// is cute::cast_smem_ptr_to_uint, which calls __cvta_generic_to_shared once
// CUTE_CVTA_GENERIC_TO_SHARED_ACTIVATED is defined. Defining both here makes
// a pointer's value its shared-memory address, so chosen start addresses show.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#define CUTE_CVTA_GENERIC_TO_SHARED_ACTIVATED 1
inline std::size_t __cvta_generic_to_shared(void const* ptr) {
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(ptr));
}

#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm100_desc.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/mma_traits_sm100.hpp>

using namespace cute;

// ---------------------------------------------------------------- smem descriptors

template <int Bits> struct ElemOf;
template <> struct ElemOf<8> { using type = uint8_t; };
template <> struct ElemOf<16> { using type = half_t; };
template <> struct ElemOf<32> { using type = float; };

template <class T, bool MN, int Swz>
auto atom() {
  if constexpr (MN) {
    if constexpr (Swz == 0) return GMMA::Layout_MN_INTER_Atom<T>{};
    else if constexpr (Swz == 1) return GMMA::Layout_MN_SW32_Atom<T>{};
    else if constexpr (Swz == 2) return GMMA::Layout_MN_SW64_Atom<T>{};
    else return GMMA::Layout_MN_SW128_Atom<T>{};
  } else {
    if constexpr (Swz == 0) return GMMA::Layout_K_INTER_Atom<T>{};
    else if constexpr (Swz == 1) return GMMA::Layout_K_SW32_Atom<T>{};
    else if constexpr (Swz == 2) return GMMA::Layout_K_SW64_Atom<T>{};
    else return GMMA::Layout_K_SW128_Atom<T>{};
  }
}

template <int Arch, bool MN, int Swz, int Bits, int Order, int Rows, int ContigBytes>
uint64_t smem_desc(int stage, int row0, int col0, uint32_t base, std::string* addrs) {
  using T = typename ElemOf<Bits>::type;
  constexpr int Contig = ContigBytes * 8 / Bits;
  constexpr int KMma = 256 / Bits;  // 32 bytes of K: one MMA's K
  // (MN, K, stage) in CuTe's (M|N, K) convention
  using MNExt = conditional_t<MN, Int<Contig>, Int<Rows>>;
  using KExt = conditional_t<MN, Int<Rows>, Int<Contig>>;
  auto shape = make_shape(MNExt{}, KExt{}, Int<3>{});
  auto order = conditional_t<(MN == (Order == 1)), Step<_1, _2, _3>, Step<_2, _1, _3>>{};
  auto layout = tile_to_shape(atom<T, MN, Swz>(), shape, order);
  T* ptr = reinterpret_cast<T*>(static_cast<std::uintptr_t>(base));
  Tensor full = make_tensor(make_smem_ptr(ptr), layout);
  Tensor staged = full(_, _, stage);
  int mn0 = MN ? col0 : row0;
  int k0 = MN ? row0 : col0;
  using SliceMN = conditional_t<MN, Int<Contig>, Int<(Rows < 64 ? Rows : 64)>>;
  Tensor slice = local_tile(staged, make_shape(SliceMN{}, Int<KMma>{}),
                            make_coord(mn0 / SliceMN::value, k0 / KMma));
  if (addrs) {
    char hex[24];
    for (int i = 0; i < int(size<0>(slice)); ++i) {
      for (int j = 0; j < int(size<1>(slice)); ++j) {
        auto addr = reinterpret_cast<std::uintptr_t>(&slice(i, j));
        std::snprintf(hex, sizeof hex, "%s%llx", addrs->empty() ? "" : " ",
                      static_cast<unsigned long long>(addr));
        *addrs += hex;
      }
    }
  }
  constexpr auto major_sm90 = MN ? GMMA::Major::MN : GMMA::Major::K;
  constexpr auto major_sm100 = MN ? UMMA::Major::MN : UMMA::Major::K;
  if constexpr (Arch == 90) {
    return uint64_t(GMMA::make_gmma_desc<major_sm90>(slice).desc_);
  } else {
    return uint64_t(UMMA::make_umma_desc<major_sm100>(slice));
  }
}

struct SmemQuery {
  int arch, swz, bits, order, rows, contig_bytes, stage, row0, col0;
  bool mn;
  uint32_t base;
  std::string* addrs;  // saddr queries: where the element addresses go
};

template <int Arch, bool MN, int Swz, int Bits, int Order, int Rows, int CB>
bool try_one(SmemQuery const& q, uint64_t& out) {
  if (q.arch != Arch || q.mn != MN || q.swz != Swz || q.bits != Bits || q.order != Order ||
      q.rows != Rows || q.contig_bytes != CB)
    return false;
  out = smem_desc<Arch, MN, Swz, Bits, Order, Rows, CB>(q.stage, q.row0, q.col0, q.base, q.addrs);
  return true;
}

template <int Arch, bool MN, int Swz, int Bits, int Order>
bool dispatch_shape(SmemQuery const& q, uint64_t& out) {
  // strided extents x contiguous widths, as listed in SMEM_SHAPES (cute.py)
  return try_one<Arch, MN, Swz, Bits, Order, 64, 128>(q, out) ||
         try_one<Arch, MN, Swz, Bits, Order, 64, 512>(q, out) ||
         try_one<Arch, MN, Swz, Bits, Order, 128, 128>(q, out) ||
         try_one<Arch, MN, Swz, Bits, Order, 128, 256>(q, out) ||
         try_one<Arch, MN, Swz, Bits, Order, 256, 128>(q, out);
}

template <int Arch, bool MN, int Swz, int Bits>
bool dispatch_order(SmemQuery const& q, uint64_t& out) {
  return dispatch_shape<Arch, MN, Swz, Bits, 0>(q, out) ||
         dispatch_shape<Arch, MN, Swz, Bits, 1>(q, out);
}

template <int Arch, bool MN, int Swz>
bool dispatch_bits(SmemQuery const& q, uint64_t& out) {
  return dispatch_order<Arch, MN, Swz, 8>(q, out) || dispatch_order<Arch, MN, Swz, 16>(q, out) ||
         dispatch_order<Arch, MN, Swz, 32>(q, out);
}

template <int Arch, bool MN>
bool dispatch_swz(SmemQuery const& q, uint64_t& out) {
  return dispatch_bits<Arch, MN, 0>(q, out) || dispatch_bits<Arch, MN, 1>(q, out) ||
         dispatch_bits<Arch, MN, 2>(q, out) || dispatch_bits<Arch, MN, 3>(q, out);
}

// The two architectures are compiled as two translation units (ORACLE_PART 0
// and 1) so that a two-core machine builds them at once.
bool dispatch_sm100(SmemQuery const& q, uint64_t& out);

#if ORACLE_PART == 1
bool dispatch_sm100(SmemQuery const& q, uint64_t& out) {
  return dispatch_swz<100, false>(q, out) || dispatch_swz<100, true>(q, out);
}
#else
bool dispatch_smem(SmemQuery const& q, uint64_t& out) {
  return dispatch_swz<90, false>(q, out) || dispatch_swz<90, true>(q, out) ||
         dispatch_sm100(q, out);
}

// ---------------------------------------------------------------- instruction descriptors

using e2m1_f8f6f4 = cutlass::detail::float_e2m1_unpacksmem_t;
using e2m3_f8f6f4 = cutlass::detail::float_e2m3_unpacksmem_t;
using e3m2_f8f6f4 = cutlass::detail::float_e3m2_unpacksmem_t;

template <class A, class B, class D, UMMA::Major AM, UMMA::Major BM>
uint64_t dense(int m, int n, int neg_a, int neg_b, int sat) {
  // M, N, negation and saturation go through CuTe's own bit fields
  UMMA::InstrDescriptor d = UMMA::make_instr_desc<A, B, D, 128, 256, AM, BM>();
  d.m_dim_ = m >> 4;
  d.n_dim_ = n >> 3;
  d.a_negate_ = neg_a;
  d.b_negate_ = neg_b;
  d.saturate_ = sat;
  return UMMA::make_runtime_instr_desc<>(d);
}

template <class A, class B, class D>
uint64_t dense_majors(int am, int bm, int m, int n, int na, int nb, int sat) {
  if (am == 0 && bm == 0) return dense<A, B, D, UMMA::Major::K, UMMA::Major::K>(m, n, na, nb, sat);
  if (am == 0 && bm == 1) return dense<A, B, D, UMMA::Major::K, UMMA::Major::MN>(m, n, na, nb, sat);
  if (am == 1 && bm == 0) return dense<A, B, D, UMMA::Major::MN, UMMA::Major::K>(m, n, na, nb, sat);
  return dense<A, B, D, UMMA::Major::MN, UMMA::Major::MN>(m, n, na, nb, sat);
}

template <class A, class B, class SF, UMMA::Major AM, UMMA::Major BM>
uint64_t scaled(int m, int n, uint32_t sfa, uint32_t sfb) {
  UMMA::InstrDescriptorBlockScaled d =
      UMMA::make_instr_desc_block_scaled<A, B, float, SF, 128, 256, AM, BM>();
  d.m_dim_ = m >> 4;
  d.n_dim_ = n >> 3;
  return UMMA::make_runtime_instr_desc_block_scaled<>(d, sfa, sfb);
}

template <class A, class B, class SF>
uint64_t scaled_majors(int am, int bm, int m, int n, uint32_t sfa, uint32_t sfb) {
  if (am == 0 && bm == 0) return scaled<A, B, SF, UMMA::Major::K, UMMA::Major::K>(m, n, sfa, sfb);
  if (am == 0 && bm == 1) return scaled<A, B, SF, UMMA::Major::K, UMMA::Major::MN>(m, n, sfa, sfb);
  if (am == 1 && bm == 0) return scaled<A, B, SF, UMMA::Major::MN, UMMA::Major::K>(m, n, sfa, sfb);
  return scaled<A, B, SF, UMMA::Major::MN, UMMA::Major::MN>(m, n, sfa, sfb);
}

// f8f6f4 operand types by tilemem dtype name
template <class F>
bool with_f8f6f4(std::string const& name, F&& f) {
  if (name == "float8_e4m3fn") return f(float_e4m3_t{});
  if (name == "float8_e5m2") return f(float_e5m2_t{});
  if (name == "float6_e2m3fn") return f(e2m3_f8f6f4{});
  if (name == "float6_e3m2fn") return f(e3m2_f8f6f4{});
  if (name == "float4_e2m1fn") return f(e2m1_f8f6f4{});
  return false;
}

bool instr(std::istringstream& in, uint64_t& out) {
  std::string kind, a, b, d;
  int am, bm, m, n, na, nb, sat;
  in >> kind >> a >> b >> d >> am >> bm >> m >> n >> na >> nb >> sat;
  auto run = [&](auto A, auto B, auto D) {
    out = dense_majors<decltype(A), decltype(B), decltype(D)>(am, bm, m, n, na, nb, sat);
    return true;
  };
  if (kind == "f16") {
    auto pick = [&](std::string const& s, auto f) {
      if (s == "float16") return f(half_t{});
      if (s == "bfloat16") return f(bfloat16_t{});
      return false;
    };
    return pick(a, [&](auto A) {
      return pick(b, [&](auto B) {
        if (d == "float32") return run(A, B, float{});
        if (d == "float16") return run(A, B, half_t{});
        return false;
      });
    });
  }
  if (kind == "tf32") return run(tfloat32_t{}, tfloat32_t{}, float{});
  if (kind == "i8") {
    auto pick = [&](std::string const& s, auto f) {
      if (s == "int8") return f(int8_t{});
      if (s == "uint8") return f(uint8_t{});
      return false;
    };
    return pick(a, [&](auto A) { return pick(b, [&](auto B) { return run(A, B, int32_t{}); }); });
  }
  if (kind == "f8f6f4") {
    return with_f8f6f4(a, [&](auto A) {
      return with_f8f6f4(b, [&](auto B) {
        if (d == "float32") return run(A, B, float{});
        if (d == "float16") return run(A, B, half_t{});
        return false;
      });
    });
  }
  return false;
}

bool block_scaled(std::istringstream& in, uint64_t& out) {
  std::string kind, a, b, sf;
  int am, bm, m, n;
  uint32_t sfa, sfb;
  in >> kind >> a >> b >> sf >> am >> bm >> m >> n >> sfa >> sfb;
  auto run = [&](auto A, auto B, auto SF) {
    out = scaled_majors<decltype(A), decltype(B), decltype(SF)>(am, bm, m, n, sfa, sfb);
    return true;
  };
  auto with_sf = [&](auto A, auto B) {
    if (sf == "float8_e8m0fnu") return run(A, B, float_ue8m0_t{});
    if (sf == "float8_e4m3fn") return run(A, B, float_ue4m3_t{});
    return false;
  };
  if (kind == "mxf8f6f4") {
    return with_f8f6f4(a, [&](auto A) { return with_f8f6f4(b, [&](auto B) { return with_sf(A, B); }); });
  }
  if ((kind == "mxf4" || kind == "mxf4nvf4") && a == "float4_e2m1fn" && b == "float4_e2m1fn") {
    return with_sf(float_e2m1_t{}, float_e2m1_t{});
  }
  return false;
}

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string what;
    in >> what;
    uint64_t out = 0;
    bool ok = false;
    std::string addrs;
    if (what == "smem" || what == "saddr") {
      SmemQuery q{};
      if (what == "saddr") q.addrs = &addrs;
      std::string major;
      in >> q.arch >> major >> q.swz >> q.bits >> q.order >> q.rows >> q.contig_bytes >> q.stage >>
          q.row0 >> q.col0 >> q.base;
      q.mn = major == "MN";
      ok = dispatch_smem(q, out);
    } else if (what == "instr") {
      ok = instr(in, out);
    } else if (what == "bs") {
      ok = block_scaled(in, out);
    }
    if (ok && what == "saddr") {
      std::printf("%s\n", addrs.c_str());
    } else if (ok) {
      std::printf("%016llx\n", static_cast<unsigned long long>(out));
    } else {
      std::printf("error %s\n", line.c_str());
    }
  }
  return 0;
}
#endif  // ORACLE_PART

// IEEE 754 half precision (ONNX float16, numpy float16) as the bits onnxruntime's tensors hold in a
// Uint16Array, and the rounding to integers that it and FPQ's fixed point share. Imports nothing:
// shared by the check, the data readers and the page.

// Round to nearest, ties to even: the core's rule for FPQ's values (std::nearbyint under the
// default rounding mode, core/fixed_point/scheme.h), which ONNX's QuantizeLinear and Round and
// IEEE 754's conversions follow too. Math.round takes ties up; the sign of a zero is kept, as
// nearbyint keeps it (-0.4 and -0.5 give -0).
export function roundHalfEven(v) {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// The half bits nearest to a double, ties to even, as numpy's float64 → float16 cast
// (npy_double_to_half): rounded once from the double, never through float32 (rounding twice can
// differ by one unit in the last place). Beyond the largest half (65504) by half a unit or more:
// infinity. NaN: the quiet NaN 0x7e00.
export function toHalf(value) {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const a = Math.abs(value);
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);  // subnormal (1024 is the smallest normal's bits)
  let exponent = Math.floor(Math.log2(a));
  if (2 ** exponent > a) exponent -= 1;  // log2 may be off by one near powers of two
  else if (2 ** (exponent + 1) <= a) exponent += 1;
  let mantissa = roundHalfEven(a * 2 ** (10 - exponent));  // in [1024, 2048]
  if (mantissa === 2048) {
    mantissa = 1024;
    exponent += 1;
  }
  return sign | ((exponent + 15) << 10) | (mantissa - 1024);
}

// The double a half's bits stand for (exact).
export function fromHalf(bits) {
  const exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff, sign = bits & 0x8000 ? -1 : 1;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

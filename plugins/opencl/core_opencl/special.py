"""OpenCL C device functions of the special functions the elementwise family needs: erfinv, digamma, i0.

Each is a text over the float type ``T`` (``float`` or ``double``), rendered into the programs that use it
(``source(name, type)``); the accuracy is checked against SciPy in tests/test_opencl.py.
"""

from __future__ import annotations

__all__ = ["FUNCTIONS", "source"]

# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): a polynomial in w = -log(1 - x^2)
# per range of w; the single-precision fit for float, the double-precision one for double.
_ERFINV_FLOAT = """inline float core_erfinv_float(float x) {
    if (!(fabs(x) < 1.0f)) return fabs(x) == 1.0f ? copysign(INFINITY, x) : NAN;
    float w = -log((1.0f - x) * (1.0f + x)), p;
    if (w < 5.0f) {
        w = w - 2.5f;
        p = 2.81022636e-08f;
        p = 3.43273939e-07f + p * w; p = -3.5233877e-06f + p * w; p = -4.39150654e-06f + p * w;
        p = 0.00021858087f + p * w; p = -0.00125372503f + p * w; p = -0.00417768164f + p * w;
        p = 0.246640727f + p * w; p = 1.50140941f + p * w;
    } else {
        w = sqrt(w) - 3.0f;
        p = -0.000200214257f;
        p = 0.000100950558f + p * w; p = 0.00134934322f + p * w; p = -0.00367342844f + p * w;
        p = 0.00573950773f + p * w; p = -0.0076224613f + p * w; p = 0.00943887047f + p * w;
        p = 1.00167406f + p * w; p = 2.83297682f + p * w;
    }
    return p * x;
}
"""
_ERFINV_DOUBLE_FITS = (  # (upper end of w, shift, whether the fit is in sqrt(w), coefficients from the highest)
    (6.25, 3.125, False, (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
                          1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
                          6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
                          2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
                          1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
                          4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
                          0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
                          0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
                        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
                        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
                        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
                        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
                        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
                        3.0838856104922207635)),
    (None, 5.0, True, (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                       -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
                       2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                       -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
                       7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
                       1.0103004648645343977, 4.8499064014085844221)),
)


def _erfinv_double() -> str:
    lines = ["inline double core_erfinv_double(double x) {",
             "    if (!(fabs(x) < 1.0)) return fabs(x) == 1.0 ? copysign((double)INFINITY, x) : NAN;",
             "    double w = -log((1.0 - x) * (1.0 + x)), p;"]
    for k, (end, shift, root, coefficients) in enumerate(_ERFINV_DOUBLE_FITS):
        head = "if" if k == 0 else "} else if" if end is not None else "} else"
        lines.append(f"    {head}{f' (w < {end!r})' if end is not None else ''} {{")
        lines.append(f"        w = {'sqrt(w)' if root else 'w'} - {shift!r};")
        lines.append(f"        p = {coefficients[0]!r};")
        lines += [f"        p = {c!r} + p * w;" for c in coefficients[1:]]
    lines += ["    }", "    return p * x;", "}", ""]
    return "\n".join(lines)


# digamma: the reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0, the recurrence psi(x) = psi(x + 1) - 1 / x
# up to 10, then the asymptotic series log(x) - 1 / 2x - sum B_2k / (2k x^2k) (error below 1e-17 there).
# Poles as SciPy: -inf at +0, +inf at -0, NaN at negative integers and -inf.
_DIGAMMA = """inline {T} core_digamma_positive_{T}({T} x) {
    {T} shift = 0;
    while (x < 10) { shift += 1 / x; x += 1; }
    if (isinf(x)) return x;
    {T} z = 1 / (x * x);
    {T} series = z * (({T})(1.0 / 12) - z * (({T})(1.0 / 120) - z * (({T})(1.0 / 252) - z * (({T})(1.0 / 240)
                 - z * (({T})(1.0 / 132) - z * (({T})(691.0 / 32760) - z * ({T})(1.0 / 12)))))));
    return log(x) - ({T})0.5 / x - series - shift;
}
inline {T} core_digamma_{T}({T} x) {
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        return core_digamma_positive_{T}(1 - x) - ({T})3.141592653589793 / tanpi(x);
    }
    return core_digamma_positive_{T}(x);
}
"""

# i0: Cephes' Chebyshev expansions (as NumPy's i0 and SciPy use): exp(x) * A(x / 2 - 2) up to |x| = 8,
# exp(x) * B(32 / x - 2) / sqrt(x) above, with exp(x) split in two halves so float does not overflow early.
_I0_A = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16, 1.715391285555133e-15,
    -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13, 2.95505266312964e-12,
    -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05, 0.00018850288509584165,
    -0.0005763755745385824, 0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877, -0.3046826723431984,
    0.6767952744094761
)
_I0_B = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15, 3.8116806693526224e-15,
    -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088
)
_I0 = """inline {T} core_chbevl_{T}({T} x, __constant const {T}* c, int n) {
    {T} b0 = c[0], b1 = 0, b2 = 0;
    for (int k = 1; k < n; k++) { b2 = b1; b1 = b0; b0 = x * b1 - b2 + c[k]; }
    return ({T})0.5 * (b0 - b2);
}
inline {T} core_i0_{T}({T} x) {
    x = fabs(x);
    if (x <= 8) return exp(x) * core_chbevl_{T}(x / 2 - 2, core_i0_a_{T}, LENGTH_A);
    {T} root = exp(x / 2);  // exp(x) = root * root
    return root * (core_chbevl_{T}(32 / x - 2, core_i0_b_{T}, LENGTH_B) / sqrt(x)) * root;
}
""".replace("LENGTH_A", str(len(_I0_A))).replace("LENGTH_B", str(len(_I0_B)))

FUNCTIONS = {"erfinv": "core_erfinv_{T}(a)", "digamma": "core_digamma_{T}(a)", "i0": "core_i0_{T}(a)"}


def _constants(name: str, values: tuple, type_name: str) -> str:
    suffix = "f" if type_name == "float" else ""
    return f"__constant {type_name} {name}[{len(values)}] = {{{', '.join(repr(v) + suffix for v in values)}}};\n"


def source(name: str, type_name: str) -> str:
    """The OpenCL C definitions behind ``FUNCTIONS[name]`` for the float type ``type_name``."""
    if name == "erfinv":
        return _ERFINV_FLOAT if type_name == "float" else _erfinv_double()
    if name == "digamma":
        return _DIGAMMA.replace("{T}", type_name)
    if name == "i0":
        return (_constants(f"core_i0_a_{type_name}", _I0_A, type_name)
                + _constants(f"core_i0_b_{type_name}", _I0_B, type_name) + _I0.replace("{T}", type_name))
    raise KeyError(name)

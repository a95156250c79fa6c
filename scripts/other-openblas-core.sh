#!/bin/sh
# other-openblas-core.sh — prints the name of an OpenBLAS kernel (a value for
# OPENBLAS_CORETYPE) that this CPU runs and that is not the one OpenBLAS
# picks by itself, so a test run under it catches a result that depends on
# the kernel (CI's second numeric run, .ci/run). Prefers Haswell (AVX2 + FMA,
# what many hosts force), then SkylakeX (AVX-512), then Prescott (SSE3, any
# x86-64). Prints nothing and exits 1 when it cannot tell.
set -u
own=$(python3 -c '
import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null) || exit 1
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
for core in Haswell SkylakeX Prescott; do
    case $core in
    Haswell) has avx2 && has fma || continue ;;
    SkylakeX) has avx512f && has avx512bw || continue ;;
    esac
    if [ "$(printf %s "$own" | tr A-Z a-z)" != "$(printf %s "$core" | tr A-Z a-z)" ]; then
        echo "$core"
        exit 0
    fi
done
exit 1

/*
 * rt_hash.c — the hashes the export format and feature columns depend on:
 * FarmHash Fingerprint64 (farmhashna::Hash64, the function TensorFlow's
 * Fingerprint64 and hashed feature columns use), TensorFlow's
 * FingerprintCat64 (crossed columns), and CRC-32C (tensor checksums).
 * Written from the published algorithms; bit-exact results are checked
 * against known answers in tests/unit/runtime/core/test_hash.c.
 */
#include "rt_core.h"

#include <string.h>

static const uint64_t k0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t k1 = 0xb492b66fbe98f273ULL;
static const uint64_t k2 = 0x9ae16a3b2f90404fULL;

/* The n-byte (4 or 8) little-endian number at p: one load on x86; on a
 * big-endian machine the bytes land at the top of v and one byte swap of
 * all 64 bits brings them down in order. */
static inline uint64_t fetch_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint64_t fetch64(const unsigned char *p)
{
    return fetch_le(p, 8);
}

static inline uint32_t fetch32(const unsigned char *p)
{
    return (uint32_t)fetch_le(p, 4);
}

static inline uint64_t rotr(uint64_t v, int s)
{
    return s == 0 ? v : (v >> s) | (v << (64 - s));
}

static inline uint64_t shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

static inline uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul)
{
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t hash_len0to16(const unsigned char *s, size_t len)
{
    if (len >= 8) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch64(s) + k2;
        uint64_t b = fetch64(s + len - 8);
        uint64_t c = rotr(b, 37) * mul + a;
        uint64_t d = (rotr(a, 25) + b) * mul;
        return hash_len16(c, d, mul);
    }
    if (len >= 4) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch32(s);
        return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        uint8_t a = s[0], b = s[len >> 1], c = s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix(y * k2 ^ z * k0) * k2;
    }
    return k2;
}

/* The step both mid-length cases open with, over the first and last 16
 * bytes (the first word times ka): returns z, with a and y kept for the 33..64
 * case's second round. */
static inline uint64_t hash_ends(const unsigned char *s, size_t len, uint64_t ka, uint64_t *a_out,
                                 uint64_t *y_out)
{
    uint64_t mul = k2 + len * 2;
    uint64_t a = fetch64(s) * ka;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * k2;
    *a_out = a;
    *y_out = rotr(a + b, 43) + rotr(c, 30) + d;
    return hash_len16(*y_out, a + rotr(b + k2, 18) + c, mul);
}

static uint64_t hash_len17to32(const unsigned char *s, size_t len)
{
    uint64_t a, y;
    return hash_ends(s, len, k1, &a, &y);
}

static uint64_t hash_len33to64(const unsigned char *s, size_t len)
{
    uint64_t mul = k2 + len * 2;
    uint64_t a, y;
    uint64_t z = hash_ends(s, len, k2, &a, &y);
    uint64_t e = fetch64(s + 16) * mul;
    uint64_t f = fetch64(s + 24);
    uint64_t g = (y + fetch64(s + len - 32)) * mul;
    uint64_t h = (z + fetch64(s + len - 24)) * mul;
    return hash_len16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

typedef struct {
    uint64_t first, second;
} pair64;

static pair64 weak_hash32(const unsigned char *s, uint64_t a, uint64_t b)
{
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rotr(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rotr(a, 44);
    return (pair64){a + z, b + c};
}

/* One round over the 64 bytes at s: each 64-byte block of a long string
 * with mul k1 and c 1, the last 64 bytes again with the final mul and c 9
 * (then x and z swap places, as in every round). */
static inline void hash_round(const unsigned char *s, uint64_t mul, uint64_t c, uint64_t *x,
                              uint64_t *y, uint64_t *z, pair64 *v, pair64 *w)
{
    *x = rotr(*x + *y + v->first + fetch64(s + 8), 37) * mul;
    *y = rotr(*y + v->second + fetch64(s + 48), 42) * mul;
    *x ^= w->second * c;
    *y += v->first * c + fetch64(s + 40);
    *z = rotr(*z + w->first, 33) * mul;
    *v = weak_hash32(s, v->second * mul, *x + w->first);
    *w = weak_hash32(s + 32, *z + w->second, *y + fetch64(s + 16));
    uint64_t t = *z;
    *z = *x;
    *x = t;
}

uint64_t rt_hash_fingerprint64(const void *data, size_t len)
{
    const unsigned char *s = data;
    const uint64_t seed = 81;
    if (len <= 16)
        return hash_len0to16(s, len);
    if (len <= 32)
        return hash_len17to32(s, len);
    if (len <= 64)
        return hash_len33to64(s, len);

    uint64_t x = seed;
    uint64_t y = seed * k1 + 113;
    uint64_t z = shift_mix(y * k2 + 113) * k2;
    pair64 v = {0, 0}, w = {0, 0};
    x = x * k2 + fetch64(s);

    const unsigned char *end = s + ((len - 1) / 64) * 64;
    const unsigned char *last64 = end + ((len - 1) & 63) - 63;
    do {
        hash_round(s, k1, 1, &x, &y, &z, &v, &w);
        s += 64;
    } while (s != end);
    uint64_t mul = k1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    hash_round(s, mul, 9, &x, &y, &z, &v, &w);
    return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * k0 + z,
                      hash_len16(v.second, w.second, mul) + x, mul);
}

uint64_t rt_hash_fingerprint_cat64(uint64_t fp1, uint64_t fp2)
{
    static const uint64_t kmul = 0xc6a4a7935bd1e995ULL;
    uint64_t r = fp1 ^ kmul;
    r ^= shift_mix(fp2 * kmul) * kmul;
    r *= kmul;
    r = shift_mix(r) * kmul;
    return shift_mix(r);
}

/* CRC-32C table for the reflected polynomial 0x82f63b78. */
static const uint32_t crc_table[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
    0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
    0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
    0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
    0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
    0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
    0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
    0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
    0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
    0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
    0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
    0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
    0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
    0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
    0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
    0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
    0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
    0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
    0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
    0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
    0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
    0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
    0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
    0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
    0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
    0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
    0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
    0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
    0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
    0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
    0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
    0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
    0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
    0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
    0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
    0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
    0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
    0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
    0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
    0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
    0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
    0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

/* The table-driven CRC-32C, one byte at a time: the fallback on CPUs without
 * SSE4.2, and the reference the hardware path is tested against. */
uint32_t rt_hash_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RT_CRC_HW 1
/* SSE4.2's crc32 instruction computes the same CRC (polynomial 0x1EDC6F41,
 * reflected): 8 bytes per instruction. Its latency is 3 cycles and its
 * throughput 1 per cycle, so three independent streams over the three
 * thirds of each 24 KiB block keep it busy; the three partial CRCs are
 * then joined by shifting each over the bytes that follow it (a carry-less
 * multiplication by x^(8n) mod P, gf_mul, computed once per call). Inputs
 * shorter than one block, and the tail, run as one stream. Chosen at run
 * time (__builtin_cpu_supports), so the build needs no -msse4.2. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw_stream(uint32_t crc,
                                                               const unsigned char *p,
                                                               size_t len)
{
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        crc = (uint32_t)__builtin_ia32_crc32di(crc, v);
    }
    for (; len > 0; p++, len--)
        crc = __builtin_ia32_crc32qi(crc, *p);
    return crc;
}

/* Carry-less multiplication of a and b (both 32-bit, reflected), reduced
 * modulo the CRC-32C polynomial: the bitwise way, used only for the shift
 * constants (a handful per call). */
static uint32_t gf_mul(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        if (a & 0x80000000u)
            prod ^= b;
        a <<= 1;
        b = (b >> 1) ^ ((b & 1u) ? 0x82f63b78u : 0u);
    }
    return prod;
}

/* x^(8 * n) modulo P in the reflected representation. */
static uint32_t x_pow_8n(size_t n)
{
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t sq = 0x00800000u;     /* x^8 */
    while (n) {
        if (n & 1)
            result = gf_mul(result, sq);
        sq = gf_mul(sq, sq);
        n >>= 1;
    }
    return result;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                        size_t len)
{
    enum { BLOCK = 8192 }; /* bytes per stream and round */
    if (len >= 3 * BLOCK) {
        const uint32_t shift = x_pow_8n(BLOCK);
        while (len >= 3 * BLOCK) {
            uint32_t c0 = crc, c1 = 0, c2 = 0;
            for (size_t i = 0; i < BLOCK; i += 8) {
                uint64_t v0, v1, v2;
                memcpy(&v0, p + i, 8);
                memcpy(&v1, p + BLOCK + i, 8);
                memcpy(&v2, p + 2 * BLOCK + i, 8);
                c0 = (uint32_t)__builtin_ia32_crc32di(c0, v0);
                c1 = (uint32_t)__builtin_ia32_crc32di(c1, v1);
                c2 = (uint32_t)__builtin_ia32_crc32di(c2, v2);
            }
            /* crc(A|B) = shift(crc(A), |B|) ^ crc0(B), with crc0 starting from 0. */
            crc = gf_mul(c0, shift) ^ c1;
            crc = gf_mul(crc, shift) ^ c2;
            p += 3 * BLOCK;
            len -= 3 * BLOCK;
        }
    }
    return crc_hw_stream(crc, p, len);
}
#endif

int rt_hash_crc32c_hw_available(void)
{
#ifdef RT_CRC_HW
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
    return 0;
#endif
}

uint32_t rt_hash_crc32c(uint32_t crc, const void *data, size_t len)
{
#ifdef RT_CRC_HW
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(~crc, data, len);
#endif
    return rt_hash_crc32c_portable(crc, data, len);
}

uint64_t rt_hash_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

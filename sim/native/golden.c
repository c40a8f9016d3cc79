/* The golden machine in C: an encoded program executed on the architectural state.
 *
 * Exactly `systolic.sim.golden.machine.Machine.execute`, instruction by instruction, on the
 * state the Python wrapper (`systolic.sim.golden.native_machine`) passes in numpy arrays of the
 * Machine's shapes (int64 scratchpads, accumulators, params, PE weights and the STORE unit's
 * activation and exp tables; uint8 external memory). docs/isa.md and docs/numeric-contract.md are the specification.
 *
 * Entry point: `golden_run(state, words, count, failed)` executes instructions words[0..count)
 * (8 little-endian 64-bit words each, fields decoded with the generated isa.h) until
 * HALT and returns GOLDEN_OK. Every instruction is checked completely before it changes any
 * state; on anything the Python machine would reject (an invalid field, an access beyond the
 * memory, a params shift outside -31..31, an instruction after HALT, a missing HALT), and on
 * the few values the C code does not handle exactly (state values beyond 16-bit operands,
 * intermediates beyond 64 bits that Python computes with its own integers, table indexes or
 * entries outside int8 that no LOAD makes, exp table entries outside u16), it stops with a
 * nonzero code and `*failed` = the instruction's index; the state then holds the effect of
 * every earlier instruction, so the caller continues in Python from that instruction, which
 * raises the exact message (or finishes the program).
 *
 * Internally the scratchpads are int16 (every operand is at most 16 bits) with rows padded to
 * a multiple of 16 elements, and the active and shadow PE weights int32 with rows padded the
 * same way, so the multiply-accumulate loops run over contiguous, fixed-size rows that the
 * compiler vectorises; the sums are int32 (wrapping as uint32) when acc_width <= 32 and int64
 * otherwise, then wrapped to acc_width bits. The WS loops skip the PE rows and columns whose
 * weights are all zero, the OS loops zero activations. No state is kept between calls.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"

#ifndef __SIZEOF_INT128__
#error "the native golden machine needs a compiler with 128-bit integers"
#endif
__extension__ typedef __int128 i128;

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The multiply-accumulate loops are compiled twice on x86-64, for AVX2 and for the baseline,
 * and the loader picks the one this CPU runs (the library is built without -march=native, so
 * it runs wherever it is installed; the eight-lane vectors below need AVX2 to be fast). */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef SIMD_CLONES
#define SIMD_CLONES
#endif

enum {
    GOLDEN_OK = 0,
    GOLDEN_INVALID = 1,     /* an instruction Python rejects (decode or check) */
    GOLDEN_MEMORY = 2,      /* an access beyond the simulated external memory */
    GOLDEN_ARITHMETIC = 3,  /* a params value out of range, an intermediate beyond 64 bits, or
                               a table index or entry outside int8 (spad_in values no LOAD
                               makes) */
    GOLDEN_NO_HALT = 4,     /* the words ended without HALT (failed = count) */
    GOLDEN_AFTER_HALT = 5,  /* the state had halted before the first instruction */
    GOLDEN_STATE = 6,       /* a state value the C code does not represent: an operand beyond
                               16 bits, a table entry beyond 8, an exp table entry outside
                               0..65535 (failed = 0) */
    GOLDEN_NO_MEMORY = 7,   /* malloc failed (failed = 0) */
    GOLDEN_BAD_ARGUMENT = 8 /* array sizes that do not match the configuration */
};

#define PARAMS_DEPTH 512
#define TABLE_ENTRIES 256 /* the activation table's int8 entries, index y + 128; and the exp
                            table's u16 entries, index a distance below a row's maximum */
#define EXP_TABLE_BYTES (2 * TABLE_ENTRIES) /* the bytes a TABLE with `wide` reads */
#define RAW_BYTES 4 /* the bytes of an element STORE writes with `raw` (int32) */
#define ADDRESS_LIMIT ((int64_t)1 << 32)
#define PAD 16 /* internal rows are padded to a multiple of this many elements */

/* The state, as the Python wrapper passes it (every array C-contiguous, sizes in elements). */
typedef struct golden_state {
    int64_t rows, cols, input_width, weight_width, acc_width, output_stationary;
    int64_t spad_depth, acc_depth;
    int64_t memory_size;
    uint8_t *memory;
    int64_t spad_size; /* spad_depth * dim, of spad_in and of spad_wt */
    int64_t *spad_in, *spad_wt;
    int64_t acc_size; /* acc_depth * cols */
    int64_t *acc;
    int64_t params_size; /* 512 * cols, of bias, multiplier and shift */
    int64_t *bias, *multiplier, *shift;
    int64_t weights_size; /* rows * cols, of weights and shadow */
    int64_t *weights, *shadow;
    int64_t has_shadow, halted;
    int64_t table_size; /* TABLE_ENTRIES, of table */
    int64_t *table;     /* the STORE unit's activation table (int8 values) */
    int64_t exp_table_size; /* TABLE_ENTRIES, of exp_table */
    int64_t *exp_table;     /* the STORE unit's exp table (u16 values) */
} golden_state;

/* A weight tile of the WS array: rows x wpad int32, and the extent of its nonzero weights. */
typedef struct {
    int32_t *w;
    int k, n; /* rows k.. and columns n.. hold only zeros */
} tile;

/* The cached offsets of the last element pattern a LOAD used. */
typedef struct {
    int64_t key[6];
    int valid, length, contiguous;
    int64_t low, high;
    int64_t offsets[128];
} pattern_cache;

typedef struct {
    golden_state *st;
    int rows, cols, dim, ob, in_w, wt_w, acc_w, os;
    int64_t spad_depth, acc_depth, mem_size;
    uint8_t *mem;
    int64_t stride; /* internal scratchpad row stride, elements */
    int wpad;       /* internal weight row stride */
    int16_t *spad_in, *spad_wt;
    tile active, shadow;
    int has_shadow, halted;
    int16_t table[TABLE_ENTRIES];
    uint16_t exp_table[TABLE_ENTRIES];
    pattern_cache pattern;
} machine;

static int64_t round_up(int64_t value, int64_t to) { return (value + to - 1) / to * to; }

static int64_t sext(int64_t value, int width) {
    if (width >= 64) return value;
    uint64_t shifted = (uint64_t)value << (64 - width);
    return (int64_t)shifted >> (64 - width);
}

static int64_t sext32(uint32_t value, int width) {
    return (int64_t)((int32_t)(value << (32 - width)) >> (32 - width));
}

/* -- reserved bits ------------------------------------------------------------------------ */

static void mark_bits(uint64_t *mask, int offset, int width) {
    for (int b = offset; b < offset + width; ++b) mask[b >> 6] |= UINT64_C(1) << (b & 63);
}

#define USE_(mask, offset, width, is_signed) mark_bits((mask), (offset), (width))
#define USE_EXPAND_(args) USE_ args
#define USE(mask, NAME) USE_EXPAND_((mask, NAME))
/* USE the fields every row instruction P (SOFTMAX, LAYERNORM) has (`row_op`, ROW_OP_READ). */
#define USE_ROW_OP(mask, P)                                                                    \
    do {                                                                                       \
        USE(mask, P##_FLIP_SIGN); USE(mask, P##_LENGTH); USE(mask, P##_SHIFT);                 \
        USE(mask, P##_ZERO_POINT); USE(mask, P##_LO); USE(mask, P##_HI);                       \
        USE(mask, P##_IN_ROW); USE(mask, P##_M); USE(mask, P##_MULTIPLIER);                    \
        USE(mask, P##_EXT); USE(mask, P##_N0); USE(mask, P##_ROW_STRIDE0);                     \
        USE(mask, P##_ROW_STRIDE1);                                                            \
    } while (0)

#define OPCODES 16

/* Set `mask` to the opcode's and the fields' bits of instruction class `op` (all bits when
 * `op` is no opcode, which the dispatch rejects anyway). */
static void used_bits(uint64_t *mask, int op) {
    memset(mask, 0, sizeof(uint64_t) * INSTRUCTION_WORDS);
    mark_bits(mask, 0, 8);
    switch (op) {
    case OP_LOAD:
        USE(mask, LOAD_MEM); USE(mask, LOAD_FLIP_SIGN); USE(mask, LOAD_LENGTH);
        USE(mask, LOAD_ROW); USE(mask, LOAD_COUNT); USE(mask, LOAD_EXT); USE(mask, LOAD_N0);
        USE(mask, LOAD_ROW_STRIDE0); USE(mask, LOAD_ROW_STRIDE1); USE(mask, LOAD_K0);
        USE(mask, LOAD_RUN); USE(mask, LOAD_N_MID); USE(mask, LOAD_STRIDE_MID);
        USE(mask, LOAD_STRIDE_OUTER); USE(mask, LOAD_C0); USE(mask, LOAD_J0);
        USE(mask, LOAD_BASE_I0); USE(mask, LOAD_BASE_J0); USE(mask, LOAD_J_CONTIGUOUS_1);
        USE(mask, LOAD_J_CONTIGUOUS_2);
        break;
    case OP_PRELOAD:
        USE(mask, PRELOAD_K); USE(mask, PRELOAD_N); USE(mask, PRELOAD_ROW);
        break;
    case OP_COMPUTE:
        USE(mask, COMPUTE_ACCUMULATE); USE(mask, COMPUTE_IN_ROW); USE(mask, COMPUTE_M);
        USE(mask, COMPUTE_ACC_ROW);
        break;
    case OP_COMPUTE_OS:
        USE(mask, COMPUTE_OS_ACCUMULATE); USE(mask, COMPUTE_OS_M); USE(mask, COMPUTE_OS_N);
        USE(mask, COMPUTE_OS_K); USE(mask, COMPUTE_OS_IN_ROW); USE(mask, COMPUTE_OS_A_STRIDE);
        USE(mask, COMPUTE_OS_WT_ROW); USE(mask, COMPUTE_OS_ACC_ROW);
        break;
    case OP_STORE:
        USE(mask, STORE_FLIP_SIGN); USE(mask, STORE_LUT); USE(mask, STORE_RAW); USE(mask, STORE_N);
        USE(mask, STORE_ZERO_POINT);
        USE(mask, STORE_LO); USE(mask, STORE_HI); USE(mask, STORE_PARAM_ROW);
        USE(mask, STORE_ACC_ROW); USE(mask, STORE_M); USE(mask, STORE_EXT); USE(mask, STORE_N0);
        USE(mask, STORE_ROW_STRIDE0); USE(mask, STORE_ROW_STRIDE1);
        break;
    case OP_POOL:
        USE(mask, POOL_MODE); USE(mask, POOL_FLIP_SIGN); USE(mask, POOL_LANES); USE(mask, POOL_H);
        USE(mask, POOL_W); USE(mask, POOL_KH); USE(mask, POOL_KW); USE(mask, POOL_SH);
        USE(mask, POOL_SW); USE(mask, POOL_PAD_TOP); USE(mask, POOL_PAD_LEFT); USE(mask, POOL_OH);
        USE(mask, POOL_OW); USE(mask, POOL_IN_ROW); USE(mask, POOL_MULTIPLIER);
        USE(mask, POOL_SHIFT); USE(mask, POOL_ZP_IN); USE(mask, POOL_ZP_OUT); USE(mask, POOL_LO);
        USE(mask, POOL_HI); USE(mask, POOL_EXT); USE(mask, POOL_N0); USE(mask, POOL_ROW_STRIDE0);
        USE(mask, POOL_ROW_STRIDE1);
        break;
    case OP_ADD:
        USE(mask, ADD_FLIP_SIGN); USE(mask, ADD_MUL); USE(mask, ADD_B_BROADCAST);
        USE(mask, ADD_LANES); USE(mask, ADD_SHIFT); USE(mask, ADD_ZP_A);
        USE(mask, ADD_ZP_B); USE(mask, ADD_ZP_OUT); USE(mask, ADD_LO); USE(mask, ADD_HI);
        USE(mask, ADD_A_ROW); USE(mask, ADD_B_ROW); USE(mask, ADD_M); USE(mask, ADD_MULTIPLIER_A);
        USE(mask, ADD_MULTIPLIER_B); USE(mask, ADD_EXT); USE(mask, ADD_N0);
        USE(mask, ADD_ROW_STRIDE0); USE(mask, ADD_ROW_STRIDE1);
        break;
    case OP_COPY:
        USE(mask, COPY_FLIP_SIGN); USE(mask, COPY_LUT); USE(mask, COPY_LANES); USE(mask, COPY_IN_ROW); USE(mask, COPY_M);
        USE(mask, COPY_EXT); USE(mask, COPY_N0); USE(mask, COPY_ROW_STRIDE0);
        USE(mask, COPY_ROW_STRIDE1);
        break;
    case OP_TABLE:
        USE(mask, TABLE_WIDE); USE(mask, TABLE_ROW);
        break;
    case OP_SOFTMAX:
        USE_ROW_OP(mask, SOFTMAX);
        break;
    case OP_LAYERNORM:
        USE_ROW_OP(mask, LAYERNORM);
        USE(mask, LAYERNORM_IN_ZERO_POINT); USE(mask, LAYERNORM_EPS);
        break;
    case OP_HALT:
        break;
    default:
        memset(mask, 0xff, sizeof(uint64_t) * INSTRUCTION_WORDS);
        break;
    }
}

/* Return whether every bit of `w` outside the opcode and its class's fields is zero. */
static int reserved_clear(const uint64_t *w, const uint64_t (*used)[INSTRUCTION_WORDS]) {
    const uint64_t *mask = used[OPCODE(w) & (OPCODES - 1)];
    for (int i = 0; i < INSTRUCTION_WORDS; ++i)
        if (w[i] & ~mask[i]) return 0;
    return 1;
}

/* -- address patterns ----------------------------------------------------------------------- */

/* Walks the row bases of a row pattern in order (valid once the extent is checked). */
typedef struct {
    uint64_t base, line; /* (wrapping arithmetic: every value reached lies in 0..2^32) */
    int64_t n0, r0;
    uint64_t s0, s1;
} row_walk;

static void row_walk_start(row_walk *walk, int64_t ext, int64_t n0, int64_t s0, int64_t s1) {
    walk->base = walk->line = (uint64_t)ext;
    walk->n0 = n0;
    walk->r0 = 0;
    walk->s0 = (uint64_t)s0;
    walk->s1 = (uint64_t)s1;
}

static int64_t row_walk_next(row_walk *walk) {
    int64_t base = (int64_t)walk->base;
    if (++walk->r0 == walk->n0) {
        walk->r0 = 0;
        walk->line += walk->s1;
        walk->base = walk->line;
    } else {
        walk->base += walk->s0;
    }
    return base;
}

/* Check a write of `count` rows of `row_bytes` along the row pattern of `w`: GOLDEN_INVALID
 * outside the 32-bit address space, GOLDEN_MEMORY beyond the memory. */
static int check_write(const machine *mc, int64_t ext, int64_t n0, int64_t s0, int64_t s1,
                       int64_t count, int64_t row_bytes) {
    int64_t low, base_high;
    if (row_extent(ext, n0, s0, s1, count, &low, &base_high)) return GOLDEN_INVALID;
    i128 high = (i128)base_high + row_bytes - 1;
    if (low < 0 || high >= ADDRESS_LIMIT) return GOLDEN_INVALID;
    if (high >= mc->mem_size) return GOLDEN_MEMORY;
    return GOLDEN_OK;
}

/* Write `lanes` values as operand_bytes little-endian bytes each at `address`. */
static void write_row(machine *mc, int64_t address, const int64_t *values, int lanes, int flip) {
    uint8_t *out = mc->mem + address;
    if (mc->ob == 1) {
        uint8_t mask = flip ? 0x80 : 0;
        for (int j = 0; j < lanes; ++j) out[j] = (uint8_t)values[j] ^ mask;
    } else {
        for (int j = 0; j < lanes; ++j) {
            uint64_t v = (uint64_t)values[j];
            for (int b = 0; b < mc->ob; ++b) out[j * mc->ob + b] = (uint8_t)(v >> (8 * b));
        }
    }
}

static int flip_supported(const machine *mc, int width) { return width == 8 && mc->ob == 1; }

/* -- LOAD ------------------------------------------------------------------------------------- */

/* Fill the cache with the offsets of an element pattern; GOLDEN_INVALID when one does not fit
 * int64 (Python's numpy arithmetic would not be exact either). */
static int element_offsets(machine *mc, int64_t k0, int64_t length, int64_t run, int64_t n_mid,
                           int64_t stride_mid, int64_t stride_outer) {
    pattern_cache *p = &mc->pattern;
    int64_t key[6] = {k0, length, run, n_mid, stride_mid, stride_outer};
    if (p->valid && memcmp(p->key, key, sizeof key) == 0) return GOLDEN_OK;
    p->valid = 0;
    i128 block = (i128)run * n_mid;
    if (block > INT64_MAX) return GOLDEN_INVALID;
    int64_t c = k0 % run, j = (k0 / run) % n_mid, i = k0 / (int64_t)block;
    int contiguous = 1;
    for (int64_t e = 0; e < length; ++e) {
        i128 offset = (i128)i * stride_outer + (i128)j * stride_mid + (i128)c * mc->ob;
        if (offset > INT64_MAX || offset < INT64_MIN) return GOLDEN_INVALID;
        p->offsets[e] = (int64_t)offset;
        if (e && p->offsets[e] != p->offsets[e - 1] + mc->ob) contiguous = 0;
        if (e == 0 || offset < p->low) p->low = (int64_t)offset;
        if (e == 0 || offset > p->high) p->high = (int64_t)offset;
        if (++c == run) {
            c = 0;
            if (++j == n_mid) {
                j = 0;
                ++i;
            }
        }
    }
    memcpy(p->key, key, sizeof key);
    p->length = (int)length;
    p->contiguous = contiguous;
    p->valid = 1;
    return GOLDEN_OK;
}

static int exec_load_params(machine *mc, int64_t row, int64_t count, row_walk *walk) {
    golden_state *st = mc->st;
    int cols = mc->cols;
    for (int64_t r = 0; r < count; ++r) {
        const uint8_t *src = mc->mem + row_walk_next(walk);
        int64_t *bias = st->bias + (row + r) * cols, *mult = st->multiplier + (row + r) * cols;
        int64_t *shift = st->shift + (row + r) * cols;
        for (int j = 0; j < cols; ++j) {
            const uint8_t *b = src + 4 * j, *m = src + 4 * (cols + j);
            bias[j] = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16
                                | (uint32_t)b[3] << 24);
            mult[j] = (int32_t)((uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16
                                | (uint32_t)m[3] << 24);
            shift[j] = (int8_t)src[8 * cols + j];
        }
    }
    return GOLDEN_OK;
}

static int exec_load(machine *mc, const uint64_t *w) {
    int64_t mem = FIELD(w, LOAD_MEM), flip = FIELD(w, LOAD_FLIP_SIGN);
    int64_t length = FIELD(w, LOAD_LENGTH), row = FIELD(w, LOAD_ROW);
    int64_t count = FIELD(w, LOAD_COUNT), ext = FIELD(w, LOAD_EXT), n0 = FIELD(w, LOAD_N0);
    int64_t s0 = FIELD(w, LOAD_ROW_STRIDE0), s1 = FIELD(w, LOAD_ROW_STRIDE1);
    int64_t k0 = FIELD(w, LOAD_K0), run = FIELD(w, LOAD_RUN), n_mid = FIELD(w, LOAD_N_MID);
    int64_t stride_mid = FIELD(w, LOAD_STRIDE_MID), stride_outer = FIELD(w, LOAD_STRIDE_OUTER);
    if (mem > 2 || count < 1 || n0 < 1) return GOLDEN_INVALID;
    int params = mem == 2;
    int64_t base_low, base_high;
    if (row_extent(ext, n0, s0, s1, count, &base_low, &base_high)) return GOLDEN_INVALID;
    i128 low = base_low, high = base_high;
    if (params) {
        if (k0 || length || run || n_mid || stride_mid || stride_outer || flip)
            return GOLDEN_INVALID;
        if (row + count > PARAMS_DEPTH) return GOLDEN_INVALID;
        high += 9 * (int64_t)mc->cols - 1;
    } else {
        if (length < 1 || run < 1 || n_mid < 1) return GOLDEN_INVALID;
        if (row + count > mc->spad_depth || length > mc->dim) return GOLDEN_INVALID;
        if (flip && !flip_supported(mc, mem == 1 ? mc->wt_w : mc->in_w)) return GOLDEN_INVALID;
        int status = element_offsets(mc, k0, length, run, n_mid, stride_mid, stride_outer);
        if (status) return status;
        low += mc->pattern.low;
        high += mc->pattern.high + mc->ob - 1;
    }
    if (low < 0 || high >= ADDRESS_LIMIT) return GOLDEN_INVALID;
    if (high >= mc->mem_size) return GOLDEN_MEMORY;
    row_walk walk;
    row_walk_start(&walk, ext, n0, s0, s1);
    if (params) return exec_load_params(mc, row, count, &walk);

    int width = mem == 1 ? mc->wt_w : mc->in_w;
    int16_t *spad = (mem == 1 ? mc->spad_wt : mc->spad_in) + row * mc->stride;
    const int64_t *offsets = mc->pattern.offsets;
    int len = (int)length, dim = mc->dim, contiguous = mc->pattern.contiguous;
    int64_t first = offsets[0];
    uint8_t mask = flip ? 0x80 : 0;
    for (int64_t r = 0; r < count; ++r, spad += mc->stride) {
        const uint8_t *src = mc->mem + row_walk_next(&walk);
        if (mc->ob == 1) {
            if (contiguous) {
                const uint8_t *from = src + first;
                for (int e = 0; e < len; ++e) spad[e] = (int8_t)(from[e] ^ mask);
            } else {
                for (int e = 0; e < len; ++e) spad[e] = (int8_t)(src[offsets[e]] ^ mask);
            }
        } else {
            for (int e = 0; e < len; ++e) {
                const uint8_t *b = src + offsets[e];
                spad[e] = (int16_t)(uint16_t)((unsigned)b[0] | (unsigned)b[1] << 8);
            }
        }
        if (width < 16 && (width < 8 || mc->ob == 2)) {
            for (int e = 0; e < len; ++e) spad[e] = (int16_t)sext(spad[e], width);
        }
        for (int e = len; e < dim; ++e) spad[e] = 0;
    }
    return GOLDEN_OK;
}

/* -- EXECUTE -------------------------------------------------------------------------------- */

/* Set the extent of a tile's nonzero weights. */
static void tile_extent(tile *t, int rows, int cols, int wpad) {
    int k = 0, n = 0;
    for (int r = 0; r < rows; ++r) {
        const int32_t *w = t->w + (int64_t)r * wpad;
        for (int j = 0; j < cols; ++j) {
            if (w[j]) {
                k = r + 1;
                if (j + 1 > n) n = j + 1;
            }
        }
    }
    t->k = k;
    t->n = n;
}

static int exec_preload(machine *mc, const uint64_t *w) {
    int64_t k = FIELD(w, PRELOAD_K), n = FIELD(w, PRELOAD_N), row = FIELD(w, PRELOAD_ROW);
    if (mc->os == 1 || k < 1 || n < 1 || k > mc->rows || n > mc->cols || row + k > mc->spad_depth)
        return GOLDEN_INVALID;
    tile *t = &mc->shadow;
    memset(t->w, 0, sizeof(int32_t) * (size_t)mc->rows * (size_t)mc->wpad);
    for (int64_t r = 0; r < k; ++r) {
        const int16_t *src = mc->spad_wt + (row + r) * mc->stride;
        int32_t *dst = t->w + r * mc->wpad;
        for (int64_t j = 0; j < n; ++j) dst[j] = src[j];
    }
    tile_extent(t, (int)k, (int)n, mc->wpad);
    mc->has_shadow = 1;
    return GOLDEN_OK;
}

/* acc[j] = wrap(acc[j] * accumulate + sum[j]) for j < cols (sums beyond `np` are zero). */
static ALWAYS_INLINE void settle32(int64_t *acc, const uint32_t *sum, int np, int cols,
                                   int accumulate, int acc_w) {
    int j = 0;
    int limit = np < cols ? np : cols;
    if (accumulate) {
        for (; j < limit; ++j) acc[j] = sext32((uint32_t)acc[j] + sum[j], acc_w);
        for (; j < cols; ++j) acc[j] = sext32((uint32_t)acc[j], acc_w);
    } else {
        for (; j < limit; ++j) acc[j] = sext32(sum[j], acc_w);
        for (; j < cols; ++j) acc[j] = 0;
    }
}

static ALWAYS_INLINE void settle64(int64_t *acc, const int64_t *sum, int np, int cols,
                                   int accumulate, int acc_w) {
    int j = 0;
    int limit = np < cols ? np : cols;
    if (accumulate) {
        for (; j < limit; ++j) acc[j] = sext((int64_t)((uint64_t)acc[j] + (uint64_t)sum[j]), acc_w);
        for (; j < cols; ++j) acc[j] = sext(acc[j], acc_w);
    } else {
        for (; j < limit; ++j) acc[j] = sext(sum[j], acc_w);
        for (; j < cols; ++j) acc[j] = 0;
    }
}

/* Eight int32 lanes (GCC/Clang vector extensions: the compiler maps them to the target's
 * SIMD registers, or to scalar code). */
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef int16_t v8h __attribute__((vector_size(16)));

static ALWAYS_INLINE v8i load8i(const int32_t *p) {
    v8i v;
    memcpy(&v, p, sizeof v);
    return v;
}

static ALWAYS_INLINE v8i load8h(const int16_t *p) {
    v8h v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, v8i);
}

typedef int64_t v8l __attribute__((vector_size(64)));

/* settle32 on sums held in nv vectors: acc[j] = wrap(acc[j] * accumulate + sum[j]), j < cols
 * (sums beyond 8 * nv are zero), without a round trip of the sums through memory. */
static ALWAYS_INLINE void settle_vectors(int64_t *acc, const v8u *sum, int nv, int cols,
                                         int accumulate, int acc_w) {
    int full = cols / 8 < nv ? cols / 8 : nv, left = 32 - acc_w;
    for (int v = 0; v < full; ++v) {
        v8u total = sum[v];
        if (accumulate) {
            v8l old;
            memcpy(&old, acc + 8 * v, sizeof old);
            total += __builtin_convertvector(old, v8u);
        }
        v8i wrapped = (v8i)(total << left) >> left;
        v8l wide = __builtin_convertvector(wrapped, v8l);
        memcpy(acc + 8 * v, &wide, sizeof wide);
    }
    for (int j = 8 * full; j < cols; ++j) {
        uint32_t value = j < 8 * nv ? sum[j / 8][j % 8] : 0;
        acc[j] = sext32((accumulate ? (uint32_t)acc[j] : 0) + value, acc_w);
    }
}

/* WS rows with 32-bit sums: nv * 8 columns of the weights (nv <= 16). */
static ALWAYS_INLINE void ws_rows32(const int16_t *in, int64_t stride, int64_t m,
                                    const int32_t *weights, int wpad, int k, int nv, int64_t *acc,
                                    int cols, int accumulate, int acc_w) {
    v8u sum[16];
    for (int64_t i = 0; i < m; ++i, in += stride, acc += cols) {
        for (int v = 0; v < nv; ++v) sum[v] = (v8u){0};
        for (int r = 0; r < k; ++r) {
            int32_t a = in[r];
            const int32_t *wr = weights + (int64_t)r * wpad;
            for (int v = 0; v < nv; ++v) sum[v] += (v8u)(load8i(wr + 8 * v) * a);
        }
        settle_vectors(acc, sum, nv, cols, accumulate, acc_w);
    }
}

static ALWAYS_INLINE void ws_rows64(const int16_t *in, int64_t stride, int64_t m,
                                    const int32_t *weights, int wpad, int k, int np, int64_t *acc,
                                    int cols, int accumulate, int acc_w) {
    int64_t sum[128 + PAD];
    for (int64_t i = 0; i < m; ++i, in += stride, acc += cols) {
        for (int j = 0; j < np; ++j) sum[j] = 0;
        for (int r = 0; r < k; ++r) {
            int32_t a = in[r];
            if (!a) continue;
            const int32_t *wr = weights + (int64_t)r * wpad;
            for (int j = 0; j < np; ++j) sum[j] += (int64_t)(a * wr[j]);
        }
        settle64(acc, sum, np, cols, accumulate, acc_w);
    }
}

SIMD_CLONES static void ws_dispatch32(const int16_t *in, int64_t stride, int64_t m, const int32_t *weights,
                          int wpad, int k, int np, int64_t *acc, int cols, int accumulate,
                          int acc_w) {
    switch (np / 8) {
    case 1: ws_rows32(in, stride, m, weights, wpad, k, 1, acc, cols, accumulate, acc_w); break;
    case 2: ws_rows32(in, stride, m, weights, wpad, k, 2, acc, cols, accumulate, acc_w); break;
    case 4: ws_rows32(in, stride, m, weights, wpad, k, 4, acc, cols, accumulate, acc_w); break;
    default: ws_rows32(in, stride, m, weights, wpad, k, np / 8, acc, cols, accumulate, acc_w); break;
    }
}

SIMD_CLONES static void ws_dispatch64(const int16_t *in, int64_t stride, int64_t m, const int32_t *weights,
                          int wpad, int k, int np, int64_t *acc, int cols, int accumulate,
                          int acc_w) {
    switch (np) {
    case 8: ws_rows64(in, stride, m, weights, wpad, k, 8, acc, cols, accumulate, acc_w); break;
    case 16: ws_rows64(in, stride, m, weights, wpad, k, 16, acc, cols, accumulate, acc_w); break;
    default: ws_rows64(in, stride, m, weights, wpad, k, np, acc, cols, accumulate, acc_w); break;
    }
}

static int exec_compute(machine *mc, const uint64_t *w) {
    int64_t accumulate = FIELD(w, COMPUTE_ACCUMULATE), in_row = FIELD(w, COMPUTE_IN_ROW);
    int64_t m = FIELD(w, COMPUTE_M), acc_row = FIELD(w, COMPUTE_ACC_ROW);
    if (mc->os == 1 || m < 1 || in_row + m > mc->spad_depth || acc_row + m > mc->acc_depth)
        return GOLDEN_INVALID;
    if (mc->has_shadow) { /* the shadow weights become active for this COMPUTE */
        tile swap = mc->active;
        mc->active = mc->shadow;
        mc->shadow = swap;
        mc->has_shadow = 0;
    }
    const tile *t = &mc->active;
    int np = (int)round_up(t->n, 8);
    const int16_t *in = mc->spad_in + in_row * mc->stride;
    int64_t *acc = mc->st->acc + acc_row * mc->cols;
    if (mc->acc_w <= 32)
        ws_dispatch32(in, mc->stride, m, t->w, mc->wpad, t->k, np, acc, mc->cols,
                      (int)accumulate, mc->acc_w);
    else
        ws_dispatch64(in, mc->stride, m, t->w, mc->wpad, t->k, np, acc, mc->cols,
                      (int)accumulate, mc->acc_w);
    return GOLDEN_OK;
}

/* OS rows with 32-bit sums: nv * 8 lanes (at most the scratchpad stride), n of them kept. */
static ALWAYS_INLINE void os_rows32(const machine *mc, int64_t in_row, int64_t a_stride,
                                    int64_t m, int64_t k, const int16_t *b, int nv, int n,
                                    int64_t *acc, int accumulate) {
    v8u sum[16];
    uint32_t lanes[128 + PAD];
    int64_t stride = mc->stride, dim = mc->dim;
    for (int64_t i = 0; i < m; ++i, acc += mc->cols) {
        for (int v = 0; v < nv; ++v) sum[v] = (v8u){0};
        for (int64_t chunk = 0, k0 = 0; k0 < k; ++chunk, k0 += dim) {
            const int16_t *a = mc->spad_in + (in_row + chunk * a_stride + i) * stride;
            int64_t width = k - k0 < dim ? k - k0 : dim;
            const int16_t *bk = b + k0 * stride;
            for (int64_t e = 0; e < width; ++e, bk += stride) {
                int32_t av = a[e];
                if (!av) continue; /* (pays off on the long K of OS tiles) */
                for (int v = 0; v < nv; ++v) sum[v] += (v8u)(load8h(bk + 8 * v) * av);
            }
        }
        if (n == 8 * nv) { /* (else the lanes n.. of the last vector hold other sums) */
            settle_vectors(acc, sum, nv, mc->cols, accumulate, mc->acc_w);
        } else {
            memcpy(lanes, sum, sizeof(v8u) * (size_t)nv);
            settle32(acc, lanes, n, mc->cols, accumulate, mc->acc_w);
        }
    }
}

static ALWAYS_INLINE void os_rows64(const machine *mc, int64_t in_row, int64_t a_stride,
                                    int64_t m, int64_t k, const int16_t *b, int np, int n,
                                    int64_t *acc, int accumulate) {
    int64_t sum[128 + PAD];
    int64_t stride = mc->stride, dim = mc->dim;
    for (int64_t i = 0; i < m; ++i, acc += mc->cols) {
        for (int j = 0; j < np; ++j) sum[j] = 0;
        for (int64_t chunk = 0, k0 = 0; k0 < k; ++chunk, k0 += dim) {
            const int16_t *a = mc->spad_in + (in_row + chunk * a_stride + i) * stride;
            int64_t width = k - k0 < dim ? k - k0 : dim;
            const int16_t *bk = b + k0 * stride;
            for (int64_t e = 0; e < width; ++e, bk += stride) {
                int32_t av = a[e];
                if (!av) continue;
                for (int j = 0; j < np; ++j) sum[j] += (int64_t)(av * (int32_t)bk[j]);
            }
        }
        settle64(acc, sum, n, mc->cols, accumulate, mc->acc_w);
    }
}

SIMD_CLONES static int exec_compute_os(machine *mc, const uint64_t *w) {
    int64_t accumulate = FIELD(w, COMPUTE_OS_ACCUMULATE), m = FIELD(w, COMPUTE_OS_M);
    int64_t n = FIELD(w, COMPUTE_OS_N), k = FIELD(w, COMPUTE_OS_K);
    int64_t in_row = FIELD(w, COMPUTE_OS_IN_ROW), a_stride = FIELD(w, COMPUTE_OS_A_STRIDE);
    int64_t wt_row = FIELD(w, COMPUTE_OS_WT_ROW), acc_row = FIELD(w, COMPUTE_OS_ACC_ROW);
    if (mc->os == 0 || m < 1 || n < 1 || k < 1 || m > mc->rows || n > mc->cols) return GOLDEN_INVALID;
    int64_t chunks = (k + mc->dim - 1) / mc->dim;
    if (chunks == 1 && a_stride != 0) return GOLDEN_INVALID;
    if (chunks > 1 && a_stride < m) return GOLDEN_INVALID;
    if ((i128)in_row + (i128)(chunks - 1) * a_stride + m > mc->spad_depth
        || wt_row + k > mc->spad_depth || acc_row + m > mc->acc_depth)
        return GOLDEN_INVALID;
    int np = (int)round_up(n, 8);
    const int16_t *b = mc->spad_wt + wt_row * mc->stride;
    int64_t *acc = mc->st->acc + acc_row * mc->cols;
    if (mc->acc_w <= 32) {
        switch (np / 8) {
        case 1: os_rows32(mc, in_row, a_stride, m, k, b, 1, (int)n, acc, (int)accumulate); break;
        case 2: os_rows32(mc, in_row, a_stride, m, k, b, 2, (int)n, acc, (int)accumulate); break;
        default: os_rows32(mc, in_row, a_stride, m, k, b, np / 8, (int)n, acc, (int)accumulate);
                 break;
        }
    } else {
        os_rows64(mc, in_row, a_stride, m, k, b, np, (int)n, acc, (int)accumulate);
    }
    return GOLDEN_OK;
}

/* -- STORE unit ----------------------------------------------------------------------------- */

/* round_half_to_even(value / 2^shift), shift 0..62. */
static i128 round_shift(i128 value, int shift) {
    if (shift == 0) return value;
    i128 floor = value >> shift;
    i128 remainder = value - floor * ((i128)1 << shift);
    i128 half = (i128)1 << (shift - 1);
    return floor + (remainder > half || (remainder == half && (floor & 1)));
}

static int64_t clamp(i128 value, int64_t lo, int64_t hi) {
    return value < lo ? lo : value > hi ? hi : (int64_t)value;
}

/* The activation table's entry for an int8 value y (-128..127). */
static int64_t table_entry(const machine *mc, int64_t y) { return mc->table[y + 128]; }

/* STORE with `raw`: wrap32(acc + bias[j]) of lanes j < n as 4 little-endian bytes each (exact
 * mod 2^32 for any int64 state values; the params' multiplier and shift are not used). */
static void store_raw(machine *mc, int64_t acc_row, int64_t m, int64_t n, const int64_t *bias,
                      row_walk *walk) {
    const int64_t *acc = mc->st->acc + acc_row * mc->cols;
    for (int64_t i = 0; i < m; ++i, acc += mc->cols) {
        uint8_t *out = mc->mem + row_walk_next(walk);
        for (int64_t j = 0; j < n; ++j) {
            uint32_t value = (uint32_t)((uint64_t)acc[j] + (uint64_t)bias[j]);
            for (int b = 0; b < RAW_BYTES; ++b) out[RAW_BYTES * j + b] = (uint8_t)(value >> (8 * b));
        }
    }
}

static int exec_store(machine *mc, const uint64_t *w) {
    int64_t flip = FIELD(w, STORE_FLIP_SIGN), lut = FIELD(w, STORE_LUT), n = FIELD(w, STORE_N);
    int64_t raw = FIELD(w, STORE_RAW);
    int64_t zp = FIELD(w, STORE_ZERO_POINT), lo = FIELD(w, STORE_LO), hi = FIELD(w, STORE_HI);
    int64_t param_row = FIELD(w, STORE_PARAM_ROW), acc_row = FIELD(w, STORE_ACC_ROW);
    int64_t m = FIELD(w, STORE_M), ext = FIELD(w, STORE_EXT), n0 = FIELD(w, STORE_N0);
    int64_t s0 = FIELD(w, STORE_ROW_STRIDE0), s1 = FIELD(w, STORE_ROW_STRIDE1);
    if (n < 1 || m < 1 || n0 < 1 || param_row >= PARAMS_DEPTH || lo > hi) return GOLDEN_INVALID;
    if (acc_row + m > mc->acc_depth || n > mc->cols) return GOLDEN_INVALID;
    if (flip && !flip_supported(mc, mc->in_w)) return GOLDEN_INVALID;
    if (raw && (zp || lo || hi || flip || lut)) return GOLDEN_INVALID;
    int status = check_write(mc, ext, n0, s0, s1, m, n * (raw ? RAW_BYTES : mc->ob));
    if (status == GOLDEN_INVALID) return status;
    golden_state *st = mc->st;
    const int64_t *bias = st->bias + param_row * mc->cols;
    const int64_t *mult = st->multiplier + param_row * mc->cols;
    const int64_t *shift = st->shift + param_row * mc->cols;
    row_walk walk;
    row_walk_start(&walk, ext, n0, s0, s1);
    if (raw) {
        if (status) return status;
        store_raw(mc, acc_row, m, n, bias, &walk);
        return GOLDEN_OK;
    }
    for (int64_t j = 0; j < n; ++j) {
        if (shift[j] < -31 || shift[j] > 31 || bias[j] < INT32_MIN || bias[j] > INT32_MAX
            || mult[j] < INT32_MIN || mult[j] > INT32_MAX)
            return GOLDEN_ARITHMETIC;
    }
    if (status) return status;
    int64_t out[128];
    const int64_t *acc = st->acc + acc_row * mc->cols;
    for (int64_t i = 0; i < m; ++i, acc += mc->cols) {
        for (int64_t j = 0; j < n; ++j) {
            i128 product = ((i128)acc[j] + bias[j]) * mult[j];
            out[j] = clamp(round_shift(product, 31 + (int)shift[j]) + zp, lo, hi);
            if (lut) out[j] = table_entry(mc, out[j]); /* (lo..hi lie in -128..127) */
        }
        write_row(mc, row_walk_next(&walk), out, (int)n, (int)flip);
    }
    return GOLDEN_OK;
}

static int exec_pool(machine *mc, const uint64_t *w) {
    int64_t mode = FIELD(w, POOL_MODE), flip = FIELD(w, POOL_FLIP_SIGN);
    int64_t lanes = FIELD(w, POOL_LANES), h = FIELD(w, POOL_H), wd = FIELD(w, POOL_W);
    int64_t kh = FIELD(w, POOL_KH), kw = FIELD(w, POOL_KW), sh = FIELD(w, POOL_SH);
    int64_t sw = FIELD(w, POOL_SW), pad_top = FIELD(w, POOL_PAD_TOP);
    int64_t pad_left = FIELD(w, POOL_PAD_LEFT), oh = FIELD(w, POOL_OH), ow = FIELD(w, POOL_OW);
    int64_t in_row = FIELD(w, POOL_IN_ROW), mult = FIELD(w, POOL_MULTIPLIER);
    int64_t shift = FIELD(w, POOL_SHIFT), zp_in = FIELD(w, POOL_ZP_IN);
    int64_t zp_out = FIELD(w, POOL_ZP_OUT), lo = FIELD(w, POOL_LO), hi = FIELD(w, POOL_HI);
    int64_t ext = FIELD(w, POOL_EXT), n0 = FIELD(w, POOL_N0);
    int64_t s0 = FIELD(w, POOL_ROW_STRIDE0), s1 = FIELD(w, POOL_ROW_STRIDE1);
    if (lanes < 1 || h < 1 || wd < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || oh < 1 || ow < 1
        || n0 < 1 || shift < -31 || shift > 31 || lo > hi)
        return GOLDEN_INVALID;
    if (mode == 0 && (mult || shift || zp_in || zp_out)) return GOLDEN_INVALID;
    if (kh - 1 - pad_top < 0 || (oh - 1) * sh - pad_top > h - 1) return GOLDEN_INVALID;
    if (kw - 1 - pad_left < 0 || (ow - 1) * sw - pad_left > wd - 1) return GOLDEN_INVALID;
    if (lanes > mc->dim || in_row + h * wd > mc->spad_depth) return GOLDEN_INVALID;
    if (flip && !flip_supported(mc, mc->in_w)) return GOLDEN_INVALID;
    int status = check_write(mc, ext, n0, s0, s1, oh * ow, lanes * mc->ob);
    if (status) return status;
    if (mode == 1) { /* the rounding and the zero point must stay within int64, as in Python */
        int64_t most = (kh < h ? kh : h) * (kw < wd ? kw : wd);
        i128 bound = (i128)most * 65536 * (mult < 0 ? -(i128)mult : (i128)mult);
        if ((bound >> (31 + shift)) >= ((i128)1 << 62)) return GOLDEN_ARITHMETIC;
    }
    int64_t out[128], total[128];
    row_walk walk;
    row_walk_start(&walk, ext, n0, s0, s1);
    for (int64_t oy = 0; oy < oh; ++oy) {
        int64_t y0 = oy * sh - pad_top;
        int64_t ya = y0 > 0 ? y0 : 0, yb = y0 + kh < h ? y0 + kh : h;
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t x0 = ox * sw - pad_left;
            int64_t xa = x0 > 0 ? x0 : 0, xb = x0 + kw < wd ? x0 + kw : wd;
            for (int64_t j = 0; j < lanes; ++j) total[j] = mode == 0 ? INT64_MIN : 0;
            for (int64_t y = ya; y < yb; ++y) {
                for (int64_t x = xa; x < xb; ++x) {
                    const int16_t *a = mc->spad_in + (in_row + y * wd + x) * mc->stride;
                    if (mode == 0) {
                        for (int64_t j = 0; j < lanes; ++j)
                            if (a[j] > total[j]) total[j] = a[j];
                    } else {
                        for (int64_t j = 0; j < lanes; ++j) total[j] += a[j] - zp_in;
                    }
                }
            }
            for (int64_t j = 0; j < lanes; ++j) {
                if (mode == 0) {
                    out[j] = clamp(total[j], lo, hi);
                } else {
                    i128 q = round_shift((i128)total[j] * mult, 31 + (int)shift);
                    out[j] = clamp(q + zp_out, lo, hi);
                }
            }
            write_row(mc, row_walk_next(&walk), out, (int)lanes, (int)flip);
        }
    }
    return GOLDEN_OK;
}

/* ADD: the rescaled sum of rows a and b, or with `mul` their rescaled product (exact in
 * int64: |a - zp_a|, |b - zp_b| <= 2^15 + 2^7 for the 16-bit operands of the state, so
 * |(a - zp_a) (b - zp_b) multiplier_a| < 2^62); with `b_broadcast` row b is b_row for every i. */
static int exec_add(machine *mc, const uint64_t *w) {
    int64_t flip = FIELD(w, ADD_FLIP_SIGN), lanes = FIELD(w, ADD_LANES);
    int64_t mul = FIELD(w, ADD_MUL), broadcast = FIELD(w, ADD_B_BROADCAST);
    int64_t shift = FIELD(w, ADD_SHIFT), zp_a = FIELD(w, ADD_ZP_A), zp_b = FIELD(w, ADD_ZP_B);
    int64_t zp_out = FIELD(w, ADD_ZP_OUT), lo = FIELD(w, ADD_LO), hi = FIELD(w, ADD_HI);
    int64_t a_row = FIELD(w, ADD_A_ROW), b_row = FIELD(w, ADD_B_ROW), m = FIELD(w, ADD_M);
    int64_t mult_a = FIELD(w, ADD_MULTIPLIER_A), mult_b = FIELD(w, ADD_MULTIPLIER_B);
    int64_t ext = FIELD(w, ADD_EXT), n0 = FIELD(w, ADD_N0);
    int64_t s0 = FIELD(w, ADD_ROW_STRIDE0), s1 = FIELD(w, ADD_ROW_STRIDE1);
    if (lanes < 1 || m < 1 || n0 < 1 || shift < -31 || shift > 31 || lo > hi)
        return GOLDEN_INVALID;
    int64_t b_rows = broadcast ? 1 : m;
    if (lanes > mc->dim || a_row + m > mc->spad_depth || b_row + b_rows > mc->spad_depth)
        return GOLDEN_INVALID;
    if (mul && (mult_b != 0 || mc->in_w != 8)) return GOLDEN_INVALID;
    if (flip && !flip_supported(mc, mc->in_w)) return GOLDEN_INVALID;
    int status = check_write(mc, ext, n0, s0, s1, m, lanes * mc->ob);
    if (status) return status;
    int64_t out[128];
    row_walk walk;
    row_walk_start(&walk, ext, n0, s0, s1);
    for (int64_t i = 0; i < m; ++i) {
        const int16_t *a = mc->spad_in + (a_row + i) * mc->stride;
        const int16_t *b = mc->spad_in + (b_row + (broadcast ? 0 : i)) * mc->stride;
        for (int64_t j = 0; j < lanes; ++j) {
            int64_t t = mul ? (a[j] - zp_a) * (b[j] - zp_b) * mult_a
                            : (a[j] - zp_a) * mult_a + (b[j] - zp_b) * mult_b;
            out[j] = clamp(round_shift(t, 31 + (int)shift) + zp_out, lo, hi);
        }
        write_row(mc, row_walk_next(&walk), out, (int)lanes, (int)flip);
    }
    return GOLDEN_OK;
}

/* COPY: spad_in rows unchanged, or with `lut` each element y mapped to the table's entry
 * (input_width 8; an element outside -128..127, which no LOAD makes, is left to Python). */
static int exec_copy(machine *mc, const uint64_t *w) {
    int64_t flip = FIELD(w, COPY_FLIP_SIGN), lut = FIELD(w, COPY_LUT);
    int64_t lanes = FIELD(w, COPY_LANES);
    int64_t in_row = FIELD(w, COPY_IN_ROW), m = FIELD(w, COPY_M), ext = FIELD(w, COPY_EXT);
    int64_t n0 = FIELD(w, COPY_N0), s0 = FIELD(w, COPY_ROW_STRIDE0);
    int64_t s1 = FIELD(w, COPY_ROW_STRIDE1);
    if (lanes < 1 || m < 1 || n0 < 1) return GOLDEN_INVALID;
    if (lanes > mc->dim || in_row + m > mc->spad_depth) return GOLDEN_INVALID;
    if (lut && mc->in_w != 8) return GOLDEN_INVALID;
    if (flip && !flip_supported(mc, mc->in_w)) return GOLDEN_INVALID;
    int status = check_write(mc, ext, n0, s0, s1, m, lanes * mc->ob);
    if (status) return status;
    if (lut) {
        for (int64_t i = 0; i < m; ++i) {
            const int16_t *a = mc->spad_in + (in_row + i) * mc->stride;
            for (int64_t j = 0; j < lanes; ++j)
                if (a[j] < INT8_MIN || a[j] > INT8_MAX) return GOLDEN_ARITHMETIC;
        }
    }
    int64_t out[128];
    row_walk walk;
    row_walk_start(&walk, ext, n0, s0, s1);
    for (int64_t i = 0; i < m; ++i) {
        const int16_t *a = mc->spad_in + (in_row + i) * mc->stride;
        if (lut) {
            for (int64_t j = 0; j < lanes; ++j) out[j] = table_entry(mc, a[j]);
        } else {
            for (int64_t j = 0; j < lanes; ++j) out[j] = a[j];
        }
        write_row(mc, row_walk_next(&walk), out, (int)lanes, (int)flip);
    }
    return GOLDEN_OK;
}

/* TABLE: T[e] = spad_in[row + e div dim][e mod dim] for e < 256 (input_width 8; an entry
 * outside -128..127, which no LOAD makes, is left to Python); with `wide` the exp table
 * E[e] = u8(s[2e]) + 256 u8(s[2e + 1]) of the bytes s[k] = spad_in[row + k div dim][k mod dim]
 * (u8(v) = v mod 256). */
static int exec_table(machine *mc, const uint64_t *w) {
    int64_t row = FIELD(w, TABLE_ROW), wide = FIELD(w, TABLE_WIDE), dim = mc->dim;
    int64_t rows = ((wide ? EXP_TABLE_BYTES : TABLE_ENTRIES) + dim - 1) / dim;
    if (mc->in_w != 8 || row + rows > mc->spad_depth) return GOLDEN_INVALID;
    const int16_t *spad = mc->spad_in + row * mc->stride;
    if (wide) {
        for (int64_t e = 0; e < TABLE_ENTRIES; ++e) {
            int64_t k = 2 * e;
            uint8_t low = (uint8_t)spad[(k / dim) * mc->stride + k % dim];
            uint8_t high = (uint8_t)spad[((k + 1) / dim) * mc->stride + (k + 1) % dim];
            mc->exp_table[e] = (uint16_t)(low | high << 8);
        }
        return GOLDEN_OK;
    }
    for (int64_t e = 0; e < TABLE_ENTRIES; ++e) {
        int16_t value = spad[(e / dim) * mc->stride + e % dim];
        if (value < INT8_MIN || value > INT8_MAX) return GOLDEN_ARITHMETIC;
    }
    for (int64_t e = 0; e < TABLE_ENTRIES; ++e)
        mc->table[e] = spad[(e / dim) * mc->stride + e % dim];
    return GOLDEN_OK;
}

/* -- row instructions: SOFTMAX and LAYERNORM ------------------------------------------------- */

/* The fields of a row instruction (systolic.isa.row_instruction): m tensor rows of `length`
 * int8 elements, row i held in `chunks` = ceil(length / dim) spad_in rows from in_row + i
 * chunks, requantized with (mult, shift, zp, lo, hi) and written along the row pattern (ext,
 * n0, s0, s1); LAYERNORM's in_zp and eps (0 for SOFTMAX). */
typedef struct {
    int64_t flip, length, shift, zp, lo, hi, in_row, m, mult, ext, n0, s0, s1, in_zp, eps;
    int64_t chunks;
} row_op;

/* Read the fields row instructions share from the word `w` of instruction P (SOFTMAX or
 * LAYERNORM: the same fields at the offsets of P's layout). */
#define ROW_OP_READ(op, w, P)                                                                  \
    do {                                                                                       \
        (op)->flip = FIELD(w, P##_FLIP_SIGN), (op)->length = FIELD(w, P##_LENGTH);             \
        (op)->shift = FIELD(w, P##_SHIFT), (op)->zp = FIELD(w, P##_ZERO_POINT);                \
        (op)->lo = FIELD(w, P##_LO), (op)->hi = FIELD(w, P##_HI);                              \
        (op)->in_row = FIELD(w, P##_IN_ROW), (op)->m = FIELD(w, P##_M);                        \
        (op)->mult = FIELD(w, P##_MULTIPLIER), (op)->ext = FIELD(w, P##_EXT);                  \
        (op)->n0 = FIELD(w, P##_N0), (op)->s0 = FIELD(w, P##_ROW_STRIDE0);                     \
        (op)->s1 = FIELD(w, P##_ROW_STRIDE1), (op)->in_zp = 0, (op)->eps = 0;                  \
    } while (0)

/* Element e of the tensor row held in spad_in rows from `spad`. */
static ALWAYS_INLINE int64_t row_element(const machine *mc, const int16_t *spad, int64_t e) {
    return spad[(e / mc->dim) * mc->stride + e % mc->dim];
}

/* Requantize p (y = clamp(rhe(p mult / 2^(31 + shift)) + zp, lo, hi), exact in 128 bits) and
 * write y as output e of the row at `address`, as `write_row` writes lanes. */
static void row_output(machine *mc, const row_op *op, int64_t address, int64_t e, i128 p) {
    int64_t y = clamp(round_shift(p * op->mult, 31 + (int)op->shift) + op->zp, op->lo, op->hi);
    write_row(mc, address + e * mc->ob, &y, 1, (int)op->flip);
}

/* SOFTMAX, one tensor row (from `spad`) to `address`: the exp table's entries of the distances
 * below the row's maximum, their sum S (< 2^32), the reciprocal r = min(floor(2^46 / S),
 * 2^32 - 1), p = rhe(E r / 2^31) (< 2^49), requantized by `row_output` (docs/isa.md, "SOFTMAX
 * and the exp table"). */
static void softmax_row(machine *mc, const row_op *op, const int16_t *spad, int64_t address) {
    int64_t most = INT64_MIN;
    for (int64_t e = 0; e < op->length; ++e) {
        int64_t x = row_element(mc, spad, e);
        if (x > most) most = x;
    }
    uint64_t sum = 0;
    for (int64_t e = 0; e < op->length; ++e)
        sum += mc->exp_table[most - row_element(mc, spad, e)];
    const uint64_t reciprocal_max = UINT32_MAX;
    uint64_t r = sum ? ((UINT64_C(1) << 46) / sum) : reciprocal_max;
    if (r > reciprocal_max) r = reciprocal_max;
    for (int64_t e = 0; e < op->length; ++e) {
        uint64_t entry = mc->exp_table[most - row_element(mc, spad, e)];
        row_output(mc, op, address, e, round_shift((i128)(entry * r), 31));
    }
}

/* floor(sqrt(n)) of n < 2^62, bit by bit. */
static uint64_t isqrt64(uint64_t n) {
    uint64_t root = 0, bit = UINT64_C(1) << 62;
    while (bit > n) bit >>= 2;
    while (bit) {
        if (n >= root + bit) {
            n -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return root;
}

/* LAYERNORM, one tensor row (from `spad`) to `address`: d = x - in_zp, S1 = sum d, S2 = sum
 * d^2, V = H S2 - S1^2 + eps (< 2^49), k = max(0, ceil((bitlen(V) - 30) / 2)), Vn = V >> 2k,
 * r = isqrt(floor(2^60 / Vn)) (0 when Vn = 0), p = rhe((H d - S1) r / 2^(14 + k)), requantized
 * by `row_output` (docs/isa.md, "LAYERNORM"). */
static void layernorm_row(machine *mc, const row_op *op, const int16_t *spad, int64_t address) {
    int64_t length = op->length, s1 = 0, s2 = 0;
    for (int64_t e = 0; e < length; ++e) {
        int64_t d = row_element(mc, spad, e) - op->in_zp;
        s1 += d;
        s2 += d * d;
    }
    int64_t v = length * s2 - s1 * s1 + op->eps;
    int bits = v ? 64 - __builtin_clzll((uint64_t)v) : 0, k = bits > 30 ? (bits - 29) / 2 : 0;
    uint64_t vn = (uint64_t)v >> (2 * k);
    int64_t r = vn ? (int64_t)isqrt64((UINT64_C(1) << 60) / vn) : 0;
    for (int64_t e = 0; e < length; ++e) {
        int64_t t = length * (row_element(mc, spad, e) - op->in_zp) - s1;
        row_output(mc, op, address, e, round_shift((i128)t * r, 14 + k));
    }
}

/* Return whether the `length` elements of each of the m tensor rows of `op` lie in -128..127
 * (no LOAD makes others; they are left to Python). */
static int rows_int8(const machine *mc, const row_op *op) {
    for (int64_t i = 0; i < op->m * op->chunks; ++i) {
        const int16_t *a = mc->spad_in + (op->in_row + i) * mc->stride;
        int64_t lanes = (i + 1) % op->chunks ? mc->dim : op->length - (op->chunks - 1) * mc->dim;
        for (int64_t j = 0; j < lanes; ++j)
            if (a[j] < INT8_MIN || a[j] > INT8_MAX) return 0;
    }
    return 1;
}

/* A row instruction: check `op` (GOLDEN_INVALID for fields or a configuration the instruction
 * forbids (input_width 8 only), GOLDEN_MEMORY for a write beyond memory, GOLDEN_ARITHMETIC for
 * an element outside -128..127, which no LOAD makes, left to Python), then for each tensor row
 * i write `row`'s outputs at the row pattern's base of row i. */
static int exec_rows(machine *mc, row_op *op,
                     void (*row)(machine *, const row_op *, const int16_t *, int64_t)) {
    if (op->length < 1 || op->m < 1 || op->n0 < 1 || op->shift < -31 || op->shift > 31 ||
        op->lo > op->hi)
        return GOLDEN_INVALID;
    op->chunks = (op->length + mc->dim - 1) / mc->dim;
    if (mc->in_w != 8 || op->in_row + op->m * op->chunks > mc->spad_depth) return GOLDEN_INVALID;
    if (op->flip && !flip_supported(mc, mc->in_w)) return GOLDEN_INVALID;
    int status = check_write(mc, op->ext, op->n0, op->s0, op->s1, op->m, op->length * mc->ob);
    if (status) return status;
    if (!rows_int8(mc, op)) return GOLDEN_ARITHMETIC;
    row_walk walk;
    row_walk_start(&walk, op->ext, op->n0, op->s0, op->s1);
    for (int64_t i = 0; i < op->m; ++i)
        row(mc, op, mc->spad_in + (op->in_row + i * op->chunks) * mc->stride,
            row_walk_next(&walk));
    return GOLDEN_OK;
}

/* SOFTMAX: each tensor row's softmax (`softmax_row`), as `exec_rows` runs row instructions. */
static int exec_softmax(machine *mc, const uint64_t *w) {
    row_op op;
    ROW_OP_READ(&op, w, SOFTMAX);
    return exec_rows(mc, &op, softmax_row);
}

/* LAYERNORM: each tensor row's normalization (`layernorm_row`), as `exec_rows` runs row
 * instructions. */
static int exec_layernorm(machine *mc, const uint64_t *w) {
    row_op op;
    ROW_OP_READ(&op, w, LAYERNORM);
    op.in_zp = FIELD(w, LAYERNORM_IN_ZERO_POINT), op.eps = FIELD(w, LAYERNORM_EPS);
    return exec_rows(mc, &op, layernorm_row);
}

/* -- state ------------------------------------------------------------------------------------ */

static int fits16(int64_t value) { return value >= INT16_MIN && value <= INT16_MAX; }

/* Copy the state's scratchpads and weights into the machine's internal arrays. */
static int import_state(machine *mc) {
    golden_state *st = mc->st;
    for (int s = 0; s < 2; ++s) {
        const int64_t *src = s ? st->spad_wt : st->spad_in;
        int16_t *dst = s ? mc->spad_wt : mc->spad_in;
        for (int64_t r = 0; r < mc->spad_depth; ++r) {
            for (int j = 0; j < mc->dim; ++j) {
                int64_t v = src[r * mc->dim + j];
                if (!fits16(v)) return GOLDEN_STATE;
                dst[r * mc->stride + j] = (int16_t)v;
            }
        }
    }
    for (int s = 0; s < 2; ++s) {
        const int64_t *src = s ? st->shadow : st->weights;
        tile *t = s ? &mc->shadow : &mc->active;
        if (s && !st->has_shadow) continue;
        for (int r = 0; r < mc->rows; ++r) {
            for (int j = 0; j < mc->cols; ++j) {
                int64_t v = src[r * mc->cols + j];
                if (!fits16(v)) return GOLDEN_STATE;
                t->w[r * mc->wpad + j] = (int32_t)v;
            }
        }
        tile_extent(t, mc->rows, mc->cols, mc->wpad);
    }
    for (int e = 0; e < TABLE_ENTRIES; ++e) {
        int64_t v = st->table[e], x = st->exp_table[e];
        if (v < INT8_MIN || v > INT8_MAX || x < 0 || x > UINT16_MAX) return GOLDEN_STATE;
        mc->table[e] = (int16_t)v;
        mc->exp_table[e] = (uint16_t)x;
    }
    mc->has_shadow = st->has_shadow != 0;
    mc->halted = st->halted != 0;
    return GOLDEN_OK;
}

static void export_state(machine *mc) {
    golden_state *st = mc->st;
    for (int s = 0; s < 2; ++s) {
        int64_t *dst = s ? st->spad_wt : st->spad_in;
        const int16_t *src = s ? mc->spad_wt : mc->spad_in;
        for (int64_t r = 0; r < mc->spad_depth; ++r)
            for (int j = 0; j < mc->dim; ++j) dst[r * mc->dim + j] = src[r * mc->stride + j];
    }
    for (int s = 0; s < 2; ++s) {
        int64_t *dst = s ? st->shadow : st->weights;
        const tile *t = s ? &mc->shadow : &mc->active;
        for (int r = 0; r < mc->rows; ++r)
            for (int j = 0; j < mc->cols; ++j)
                dst[r * mc->cols + j] = s && !mc->has_shadow ? 0 : t->w[r * mc->wpad + j];
    }
    for (int e = 0; e < TABLE_ENTRIES; ++e) {
        st->table[e] = mc->table[e];
        st->exp_table[e] = mc->exp_table[e];
    }
    st->has_shadow = mc->has_shadow;
    st->halted = mc->halted;
}

static int valid_arguments(const golden_state *st) {
    if (st->rows < 1 || st->rows > 128 || st->cols < 1 || st->cols > 128) return 0;
    if (st->input_width < 4 || st->input_width > 16 || st->weight_width < 4
        || st->weight_width > 16 || st->acc_width < 8 || st->acc_width > 64)
        return 0;
    int64_t dim = st->rows > st->cols ? st->rows : st->cols;
    if (st->spad_depth < 0 || st->acc_depth < 0 || st->memory_size < 0) return 0;
    if (st->spad_size != st->spad_depth * dim || st->acc_size != st->acc_depth * st->cols
        || st->params_size != PARAMS_DEPTH * st->cols || st->weights_size != st->rows * st->cols
        || st->table_size != TABLE_ENTRIES || st->exp_table_size != TABLE_ENTRIES)
        return 0;
    return st->spad_in && st->spad_wt && st->acc && st->bias && st->multiplier && st->shift
           && st->weights && st->shadow && st->table && st->exp_table
           && (st->memory || !st->memory_size);
}

/* Execute words[0..count) until HALT; see the file comment. */
int golden_run(golden_state *st, const uint64_t *words, int64_t count, int64_t *failed) {
    *failed = 0;
    if (!valid_arguments(st)) return GOLDEN_BAD_ARGUMENT;
    machine mc;
    memset(&mc, 0, sizeof mc);
    mc.st = st;
    mc.rows = (int)st->rows;
    mc.cols = (int)st->cols;
    mc.dim = mc.rows > mc.cols ? mc.rows : mc.cols;
    mc.in_w = (int)st->input_width;
    mc.wt_w = (int)st->weight_width;
    mc.acc_w = (int)st->acc_width;
    mc.ob = ((mc.in_w > mc.wt_w ? mc.in_w : mc.wt_w) + 7) / 8;
    mc.os = (int)st->output_stationary; /* 0: ws, 1: os, 2: both (either per instruction) */
    mc.spad_depth = st->spad_depth;
    mc.acc_depth = st->acc_depth;
    mc.mem = st->memory;
    mc.mem_size = st->memory_size;
    mc.stride = round_up(mc.dim, PAD);
    mc.wpad = (int)round_up(mc.cols, PAD);
    size_t spad_elements = (size_t)(mc.spad_depth * mc.stride + PAD);
    size_t tile_elements = (size_t)mc.rows * (size_t)mc.wpad;
    mc.spad_in = calloc(spad_elements, sizeof(int16_t));
    mc.spad_wt = calloc(spad_elements, sizeof(int16_t));
    mc.active.w = calloc(tile_elements, sizeof(int32_t));
    mc.shadow.w = calloc(tile_elements, sizeof(int32_t));
    int status = GOLDEN_OK;
    if (!mc.spad_in || !mc.spad_wt || !mc.active.w || !mc.shadow.w) {
        status = GOLDEN_NO_MEMORY;
        goto done;
    }
    status = import_state(&mc);
    if (status) goto done;
    if (mc.halted && count > 0) {
        status = GOLDEN_AFTER_HALT;
        goto export;
    }
    uint64_t used[OPCODES][INSTRUCTION_WORDS];
    for (int op = 0; op < OPCODES; ++op) used_bits(used[op], op);
    int64_t index = 0;
    for (; index < count && !mc.halted; ++index) {
        const uint64_t *w = words + index * INSTRUCTION_WORDS;
        int op = OPCODE(w);
        if (op >= OPCODES || !reserved_clear(w, (const uint64_t (*)[INSTRUCTION_WORDS])used)) {
            status = GOLDEN_INVALID;
            break;
        }
        switch (op) {
        case OP_LOAD: status = exec_load(&mc, w); break;
        case OP_PRELOAD: status = exec_preload(&mc, w); break;
        case OP_COMPUTE: status = exec_compute(&mc, w); break;
        case OP_COMPUTE_OS: status = exec_compute_os(&mc, w); break;
        case OP_STORE: status = exec_store(&mc, w); break;
        case OP_POOL: status = exec_pool(&mc, w); break;
        case OP_ADD: status = exec_add(&mc, w); break;
        case OP_COPY: status = exec_copy(&mc, w); break;
        case OP_TABLE: status = exec_table(&mc, w); break;
        case OP_SOFTMAX: status = exec_softmax(&mc, w); break;
        case OP_LAYERNORM: status = exec_layernorm(&mc, w); break;
        case OP_HALT: mc.halted = 1; break;
        default: status = GOLDEN_INVALID; break;
        }
        if (status) break;
    }
    *failed = index;
    if (!status && !mc.halted) status = GOLDEN_NO_HALT;
export:
    export_state(&mc);
done:
    free(mc.spad_in);
    free(mc.spad_wt);
    free(mc.active.w);
    free(mc.shadow.w);
    return status;
}

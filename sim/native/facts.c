/* External facts of LOAD and STORE-unit instructions for the cycle model, from their words.
 *
 * `external_facts` fills, for every instruction of the program whose opcode is LOAD, STORE,
 * POOL, ADD, COPY, SOFTMAX or LAYERNORM, its cost (LOAD: the aligned bus beats of all its segments,
 * `load_timing.load_beats`; STORE unit: `store_timing.duration`) and the first and last
 * external byte of its footprint (`Instruction.footprint`'s EXTERNAL range); for TABLE (STORE
 * unit, no external range) its cost only; other rows are left as they are. The Python functions named are the specification
 * (tests/sim/timing/test_native_facts.py compares the two on random instructions). An
 * instruction whose row extent leaves int64 (`row_extent`, isa.h) counts as not valid.
 */
#include <stdint.h>

#include "isa.h"

#define LOAD_TARGET_PARAMS 2
#define RAW_BYTES 4          /* the bytes of an element STORE writes with `raw` (int32) */
#define TABLE_ENTRIES 256    /* the entries of the activation table, one byte each */
#define EXP_TABLE_BYTES 512  /* the exp table's 256 u16 entries */
#define SOFTMAX_PASSES 3     /* SOFTMAX reads a row three times: maximum, sum, outputs */
#define SOFTMAX_ROW_CYCLES 40 /* per row: the reciprocal and the pipeline */
#define SOFTMAX_FIXED 3
#define LAYERNORM_PASSES 2    /* LAYERNORM reads a row twice: the sums, the outputs */
#define LAYERNORM_ROW_CYCLES 60 /* per row: V, the division, the square root, the pipeline */
#define LAYERNORM_FIXED 3

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t beats(int64_t address, int64_t length, int64_t bus) {
    return floor_div(address + length - 1, bus) - floor_div(address, bus) + 1;
}

/* Offset of element e of an element pattern (patterns.py, module docstring). */
static int64_t element_offset(const uint64_t *w, int64_t e, int64_t element_bytes) {
    int64_t k = FIELD(w, LOAD_K0) + e, run = FIELD(w, LOAD_RUN), n_mid = FIELD(w, LOAD_N_MID);
    int64_t c = k % run, j = (k / run) % n_mid, i = k / (run * n_mid);
    return i * FIELD(w, LOAD_STRIDE_OUTER) + j * FIELD(w, LOAD_STRIDE_MID) + c * element_bytes;
}

#define MAX_RUNS 65536 /* length is a 16-bit field: at most 65535 elements, so runs */

static int load_facts(const uint64_t *w, int64_t operand_bytes, int64_t bus,
                      int64_t params_row_bytes, int64_t *run_offsets, int64_t *run_lengths,
                      int64_t *cost, int64_t *first, int64_t *last) {
    int64_t count = FIELD(w, LOAD_COUNT), ext = FIELD(w, LOAD_EXT), n0 = FIELD(w, LOAD_N0);
    int64_t s0 = FIELD(w, LOAD_ROW_STRIDE0), s1 = FIELD(w, LOAD_ROW_STRIDE1);
    if (count < 1 || n0 < 1) return 1;
    int64_t runs;
    int64_t low_offset, high_end; /* lowest element offset, highest offset + element bytes */
    if (FIELD(w, LOAD_MEM) == LOAD_TARGET_PARAMS) {
        runs = 1;
        run_offsets[0] = 0;
        run_lengths[0] = params_row_bytes;
        low_offset = 0;
        high_end = params_row_bytes;
    } else {
        int64_t length = FIELD(w, LOAD_LENGTH);
        if (length < 1 || FIELD(w, LOAD_RUN) < 1 || FIELD(w, LOAD_N_MID) < 1) return 1;
        runs = 0;
        int64_t previous = 0;
        low_offset = INT64_MAX;
        int64_t high_offset = INT64_MIN;
        for (int64_t e = 0; e < length; e++) {
            int64_t offset = element_offset(w, e, operand_bytes);
            if (offset < low_offset) low_offset = offset;
            if (offset > high_offset) high_offset = offset;
            if (e > 0 && offset - previous == operand_bytes) {
                run_lengths[runs - 1] += operand_bytes;
            } else {
                run_offsets[runs] = offset;
                run_lengths[runs] = operand_bytes;
                runs++;
            }
            previous = offset;
        }
        high_end = high_offset + operand_bytes;
    }
    int64_t base_low, base_high;
    if (row_extent(ext, n0, s0, s1, count, &base_low, &base_high)) return 1;
    *first = base_low + low_offset;
    *last = base_high + high_end - 1;
    int64_t total = 0;
    if (bus == 1) {
        int64_t row_bytes = 0;
        for (int64_t s = 0; s < runs; s++) row_bytes += run_lengths[s];
        total = count * row_bytes;
    } else {
        for (int64_t r = 0; r < count; r++) {
            int64_t base = row_base(ext, n0, s0, s1, r);
            for (int64_t s = 0; s < runs; s++) total += beats(base + run_offsets[s], run_lengths[s], bus);
        }
    }
    *cost = total;
    return 0;
}

/* The reader's span of a window along one axis (store_timing._window_span). */
static int64_t window_span(int64_t start, int64_t kernel, int64_t size) {
    int64_t end = start + kernel < size ? start + kernel : size;
    return end - (start > 0 ? start : 0);
}

/* STORE-unit instructions: rows, row bytes, the pattern fields, the fixed cycles K. */
static int store_facts(const uint64_t *w, int opcode, int64_t operand_bytes, int64_t bus,
                       int64_t *cost, int64_t *first, int64_t *last) {
    int64_t rows, row_bytes, fixed, reader = 1, ext, n0, s0, s1;
    switch (opcode) {
    case OP_STORE: /* (raw: 4-byte elements, K 9) */
        if (FIELD(w, STORE_RAW) && FIELD(w, STORE_LUT)) return 1;
        rows = FIELD(w, STORE_M);
        row_bytes = FIELD(w, STORE_N) * (FIELD(w, STORE_RAW) ? RAW_BYTES : operand_bytes);
        fixed = FIELD(w, STORE_LUT) ? 10 : 9;
        ext = FIELD(w, STORE_EXT), n0 = FIELD(w, STORE_N0);
        s0 = FIELD(w, STORE_ROW_STRIDE0), s1 = FIELD(w, STORE_ROW_STRIDE1);
        break;
    case OP_COPY:
        rows = FIELD(w, COPY_M), row_bytes = FIELD(w, COPY_LANES) * operand_bytes;
        fixed = FIELD(w, COPY_LUT) ? 4 : 3;
        ext = FIELD(w, COPY_EXT), n0 = FIELD(w, COPY_N0);
        s0 = FIELD(w, COPY_ROW_STRIDE0), s1 = FIELD(w, COPY_ROW_STRIDE1);
        break;
    case OP_ADD:
        rows = FIELD(w, ADD_M), row_bytes = FIELD(w, ADD_LANES) * operand_bytes;
        fixed = FIELD(w, ADD_MUL) ? 12 : 10;
        reader = 2;
        ext = FIELD(w, ADD_EXT), n0 = FIELD(w, ADD_N0);
        s0 = FIELD(w, ADD_ROW_STRIDE0), s1 = FIELD(w, ADD_ROW_STRIDE1);
        break;
    case OP_POOL:
        rows = FIELD(w, POOL_OH) * FIELD(w, POOL_OW);
        row_bytes = FIELD(w, POOL_LANES) * operand_bytes, fixed = 10;
        ext = FIELD(w, POOL_EXT), n0 = FIELD(w, POOL_N0);
        s0 = FIELD(w, POOL_ROW_STRIDE0), s1 = FIELD(w, POOL_ROW_STRIDE1);
        break;
    default:
        return 1;
    }
    if (rows < 1 || n0 < 1 || row_bytes < 1) return 1;
    int64_t base_low, base_high;
    if (row_extent(ext, n0, s0, s1, rows, &base_low, &base_high)) return 1;
    *first = base_low;
    *last = base_high + row_bytes - 1;
    /* duration = max over j of (C_j + b_j + ... + b_last) + K, C_j = c_0 + ... + c_j,
     * walked from the last row: C_j = C_total - (c_(j+1) + ... + c_last). */
    int64_t oh = 0, ow = 0, sh = 0, sw = 0, kh = 0, kw = 0, h = 0, wd = 0, pt = 0, pl = 0;
    int64_t c_total;
    if (opcode == OP_POOL) {
        oh = FIELD(w, POOL_OH), ow = FIELD(w, POOL_OW), sh = FIELD(w, POOL_SH);
        sw = FIELD(w, POOL_SW), kh = FIELD(w, POOL_KH), kw = FIELD(w, POOL_KW);
        h = FIELD(w, POOL_H), wd = FIELD(w, POOL_W);
        pt = FIELD(w, POOL_PAD_TOP), pl = FIELD(w, POOL_PAD_LEFT);
        int64_t span_rows = 0, span_cols = 0;
        for (int64_t oy = 0; oy < oh; oy++) span_rows += window_span(oy * sh - pt, kh, h);
        for (int64_t ox = 0; ox < ow; ox++) span_cols += window_span(ox * sw - pl, kw, wd);
        c_total = span_rows * span_cols;
    } else {
        c_total = rows * reader;
    }
    int64_t later_reads = 0, remaining_beats = 0, best = INT64_MIN;
    for (int64_t j = rows - 1; j >= 0; j--) {
        remaining_beats += beats(row_base(ext, n0, s0, s1, j), row_bytes, bus);
        int64_t value = c_total - later_reads + remaining_beats;
        if (value > best) best = value;
        if (opcode == OP_POOL) {
            later_reads += window_span((j / ow) * sh - pt, kh, h) * window_span((j % ow) * sw - pl, kw, wd);
        } else {
            later_reads += reader;
        }
    }
    *cost = best + fixed;
    return 0;
}

/* TABLE: one spad_in row read per cycle, R = ceil(256 / dim) rows (ceil(512 / dim) with
 * `wide`), then 2 cycles. */
static int64_t table_cycles(const uint64_t *w, int64_t dim) {
    int64_t bytes = FIELD(w, TABLE_WIDE) ? EXP_TABLE_BYTES : TABLE_ENTRIES;
    return (bytes + dim - 1) / dim + 2;
}

/* SOFTMAX and LAYERNORM: `rows` rows of `length` elements one after the other, each
 * C = ceil(length / dim) spad_in rows read `passes` times, `row_cycles` cycles, then its b_i
 * beats written: sum over rows of (passes C + row_cycles + b_i) + fixed. The row pattern
 * (ext, n0, s0, s1) places the written rows. */
static int row_unit_facts(int64_t rows, int64_t length, int64_t ext, int64_t n0, int64_t s0,
                          int64_t s1, int64_t passes, int64_t row_cycles, int64_t fixed,
                          int64_t operand_bytes, int64_t bus, int64_t dim, int64_t *cost,
                          int64_t *first, int64_t *last) {
    if (rows < 1 || n0 < 1 || length < 1) return 1;
    int64_t row_bytes = length * operand_bytes, base_low, base_high;
    if (row_extent(ext, n0, s0, s1, rows, &base_low, &base_high)) return 1;
    *first = base_low;
    *last = base_high + row_bytes - 1;
    int64_t total = rows * (passes * ((length + dim - 1) / dim) + row_cycles) + fixed;
    for (int64_t i = 0; i < rows; i++) total += beats(row_base(ext, n0, s0, s1, i), row_bytes, bus);
    *cost = total;
    return 0;
}

/* SOFTMAX: each row read three times (maximum, sum, outputs), 40 cycles: sum over rows of
 * (3 C + 40 + b_i) + 3. */
static int softmax_facts(const uint64_t *w, int64_t operand_bytes, int64_t bus, int64_t dim,
                         int64_t *cost, int64_t *first, int64_t *last) {
    return row_unit_facts(FIELD(w, SOFTMAX_M), FIELD(w, SOFTMAX_LENGTH), FIELD(w, SOFTMAX_EXT),
                          FIELD(w, SOFTMAX_N0), FIELD(w, SOFTMAX_ROW_STRIDE0),
                          FIELD(w, SOFTMAX_ROW_STRIDE1), SOFTMAX_PASSES, SOFTMAX_ROW_CYCLES,
                          SOFTMAX_FIXED, operand_bytes, bus, dim, cost, first, last);
}

/* LAYERNORM: each row read twice (the sums, the outputs), 60 cycles: sum over rows of
 * (2 C + 60 + b_i) + 3. */
static int layernorm_facts(const uint64_t *w, int64_t operand_bytes, int64_t bus, int64_t dim,
                           int64_t *cost, int64_t *first, int64_t *last) {
    return row_unit_facts(FIELD(w, LAYERNORM_M), FIELD(w, LAYERNORM_LENGTH),
                          FIELD(w, LAYERNORM_EXT), FIELD(w, LAYERNORM_N0),
                          FIELD(w, LAYERNORM_ROW_STRIDE0), FIELD(w, LAYERNORM_ROW_STRIDE1),
                          LAYERNORM_PASSES, LAYERNORM_ROW_CYCLES, LAYERNORM_FIXED,
                          operand_bytes, bus, dim, cost, first, last);
}

/* config: operand_bytes, bus_bytes, params_row_bytes, dim. run_offsets, run_lengths: scratch of
 * MAX_RUNS entries each. Returns 0, or 1 with *failed = the index of an instruction whose
 * fields are not valid (the Python path then reports it). */
int external_facts(const uint64_t *words, int64_t count, const int64_t *config,
                   int64_t *run_offsets, int64_t *run_lengths, int64_t *cost, int64_t *first,
                   int64_t *last, int64_t *failed) {
    int64_t operand_bytes = config[0], bus = config[1], params_row_bytes = config[2];
    int64_t dim = config[3];
    if (operand_bytes < 1 || bus < 1 || params_row_bytes < 1 || dim < 1) {
        *failed = -1;
        return 1;
    }
    for (int64_t i = 0; i < count; i++) {
        const uint64_t *w = words + i * INSTRUCTION_WORDS;
        int opcode = OPCODE(w), status = 0;
        if (opcode == OP_LOAD) {
            status = load_facts(w, operand_bytes, bus, params_row_bytes, run_offsets,
                                run_lengths, cost + i, first + i, last + i);
        } else if (opcode == OP_STORE || opcode == OP_POOL || opcode == OP_ADD ||
                   opcode == OP_COPY) {
            status = store_facts(w, opcode, operand_bytes, bus, cost + i, first + i, last + i);
        } else if (opcode == OP_SOFTMAX) {
            status = softmax_facts(w, operand_bytes, bus, dim, cost + i, first + i, last + i);
        } else if (opcode == OP_LAYERNORM) {
            status = layernorm_facts(w, operand_bytes, bus, dim, cost + i, first + i, last + i);
        } else if (opcode == OP_TABLE) {
            cost[i] = table_cycles(w, dim);
        }
        if (status) {
            *failed = i;
            return 1;
        }
    }
    return 0;
}

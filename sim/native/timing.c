/* The main loop of the analytic cycle model (`systolic.sim.timing.program_model`) in C.

   `timing_pass` is `ProgramModel._pass` instruction for instruction: the same in-flight table
   (split by unit), per-unit queues, hazard masks and row spans, the EXECUTE unit's schedule
   (`execute_timing.ExecuteTiming`'s rules), the EXECUTE completion merge with its window of
   strobes, checkpoints every `checkpoint_every` instructions and returns to them (rollbacks),
   then the final check of every EXECUTE delivery against the exact merge of all strobes and
   the per-unit busy cycles. The Python pass is the specification; the wrapper
   (`systolic.sim.timing.native_pass`) runs it instead whenever this returns nonzero.

   Differences of representation only: an in-flight entry is the instruction's index (its
   completion is always `completes[index]`, as the Python entries are kept equal to it), the
   `read` map and the `open_ex` set are per-instruction arrays (`reader_of`, `in_window`), and
   `raw_of[i] == NO_RAW` stands for None.

   No state outlives a call; every input index is checked before use. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

enum { LD = 0, EX = 1, ST = 2, UNITS = 3 };
enum { K_LD = 0, K_ST = 1, K_COMPUTE = 2, K_PRELOAD = 3, K_COMPUTE_OS = 4, KINDS = 5 };
static const i64 UNIT_OF_KIND[KINDS] = {LD, ST, EX, EX, EX};

/* Return codes (nonzero: the caller runs the Python pass). */
enum {
    OK = 0,
    BAD_PARAMETER = 1,   /* a size or parameter out of range */
    BAD_INSTRUCTION = 2, /* an instruction's facts are inconsistent (index in *failed) */
    NO_MEMORY = 3,
    UNSETTLED = 4,       /* more rollbacks than max_rollbacks */
    MERGE_DIFFERS = 5,   /* a delivery differs from the exact merge (index in *failed) */
};

/* Layout of `params`. */
enum {
    P_ENTRIES, P_DEPTH, P_LATENCY, P_ROWS, P_DIM, P_ARRAY_LATENCY, P_OS_DRAIN, P_SHARED_BIT,
    P_CHECKPOINT_EVERY, P_CHECKPOINTS_KEPT, P_MAX_ROLLBACKS, P_FIRST_ACCEPT, P_COUNT
};
/* Layout of `lengths`: the element count of every array argument. */
enum {
    L_KINDS, L_UNITS, L_MASKS, L_ARGS, L_KS, L_SPANS, L_SHARED_OFFSETS, L_SHARED_RANGES,
    L_ACCEPTS, L_ISSUES, L_COMPLETES, L_COUNT
};
/* Layout of `results`. */
enum {
    R_DISPATCH_STALL, R_HAZARD_LD, R_HAZARD_EX, R_HAZARD_ST, R_BUSY_LD, R_BUSY_EX, R_BUSY_ST,
    R_HALT, R_ROLLBACKS, R_COUNT
};

#define NO_RAW INT64_MIN

/* The EXECUTE unit's schedule (`_pass`'s local variables, in `ex_start`'s order). */
typedef struct {
    i64 last_taken, w_free, w_last, loaded, activated, a_free, a_last, newest, slot_free;
    i64 closed, pending, loader_free, bank0, bank1, beat_taken, tile_end, chunks;
    i64 both, mode_os; /* both dataflows: the family the array runs now (1: COMPUTE.OS) */
} Execute;
#define EXECUTE_FIELDS 19

/* An EXECUTE strobe of the merge window (`[cycle, key, index, delivered, announced]`); in a
   checkpoint also the instruction's reader and completion then. */
typedef struct {
    i64 raw, key, index, delivered, announced, reader, saved;
} Strobe;

typedef struct {
    i64 *data;
    i64 len, cap;
} IndexList;

typedef struct {
    Strobe *data;
    i64 len, cap;
} Window;

/* Everything a checkpoint restores. */
typedef struct {
    i64 accept, dispatch_stall, hazard[UNITS], free_ld, free_st, window_last;
    Execute ex;
    i64 *recent; /* UNITS rings of `depth` issues */
    i64 recent_head[UNITS], recent_len[UNITS];
    IndexList flights[UNITS];
    Window window;
} State;

typedef struct {
    i64 at;
    State state;
} Checkpoint;

typedef struct {
    int set;
    i64 reader, cycle;
} Stale;

/* ---- small containers ------------------------------------------------------------------- */

static int reserve(void **data, i64 *cap, i64 want, size_t size) {
    if (want <= *cap) return 1;
    i64 cap2 = *cap ? *cap : 16;
    while (cap2 < want) cap2 *= 2;
    void *grown = realloc(*data, (size_t)cap2 * size);
    if (!grown) return 0;
    *data = grown;
    *cap = cap2;
    return 1;
}

static int list_push(IndexList *list, i64 value) {
    if (!reserve((void **)&list->data, &list->cap, list->len + 1, sizeof(i64))) return 0;
    list->data[list->len++] = value;
    return 1;
}

static int window_insert(Window *w, i64 position, Strobe item) {
    if (!reserve((void **)&w->data, &w->cap, w->len + 1, sizeof(Strobe))) return 0;
    memmove(w->data + position + 1, w->data + position,
            (size_t)(w->len - position) * sizeof(Strobe));
    w->data[position] = item;
    w->len++;
    return 1;
}

static void window_delete(Window *w, i64 position) {
    memmove(w->data + position, w->data + position + 1,
            (size_t)(w->len - position - 1) * sizeof(Strobe));
    w->len--;
}

/* (raw, key, index) order of the merge; indexes are unique in a window. */
static int strobe_after(const Strobe *a, const Strobe *b) {
    if (a->raw != b->raw) return a->raw > b->raw;
    if (a->key != b->key) return a->key > b->key;
    return a->index > b->index;
}

/* `bisect.bisect(window, item)`: the first position whose strobe comes after `item`. */
static i64 window_bisect(const Window *w, const Strobe *item) {
    i64 low = 0, high = w->len;
    while (low < high) {
        i64 mid = (low + high) / 2;
        if (strobe_after(&w->data[mid], item)) high = mid;
        else low = mid + 1;
    }
    return low;
}

static i64 window_find(const Window *w, i64 index) {
    for (i64 p = 0; p < w->len; p++)
        if (w->data[p].index == index) return p;
    return -1;
}

static void state_free(State *s) {
    free(s->recent);
    for (int u = 0; u < UNITS; u++) free(s->flights[u].data);
    free(s->window.data);
    memset(s, 0, sizeof *s);
}

/* Copy `src` into `dst` (whose buffers are reused or grown). */
static int state_copy(State *dst, const State *src, i64 depth) {
    i64 *recent = dst->recent;
    IndexList flights[UNITS];
    memcpy(flights, dst->flights, sizeof flights);
    Window window = dst->window;
    if (!recent) {
        recent = malloc((size_t)(UNITS * depth) * sizeof(i64));
        if (!recent) return 0;
    }
    memcpy(recent, src->recent, (size_t)(UNITS * depth) * sizeof(i64));
    for (int u = 0; u < UNITS; u++) {
        if (!reserve((void **)&flights[u].data, &flights[u].cap, src->flights[u].len,
                     sizeof(i64))) {
            dst->recent = recent;
            memcpy(dst->flights, flights, sizeof flights);
            return 0;
        }
        if (src->flights[u].len)
            memcpy(flights[u].data, src->flights[u].data,
                   (size_t)src->flights[u].len * sizeof(i64));
        flights[u].len = src->flights[u].len;
    }
    if (!reserve((void **)&window.data, &window.cap, src->window.len, sizeof(Strobe))) {
        dst->recent = recent;
        memcpy(dst->flights, flights, sizeof flights);
        return 0;
    }
    if (src->window.len)
        memcpy(window.data, src->window.data, (size_t)src->window.len * sizeof(Strobe));
    window.len = src->window.len;
    *dst = *src;
    dst->recent = recent;
    memcpy(dst->flights, flights, sizeof flights);
    dst->window = window;
    return 1;
}

/* ---- the pass's shared arrays --------------------------------------------------------- */

typedef struct {
    i64 n, memories, all_memories, shared_bit;
    const i64 *kinds, *masks, *spans, *shared_offsets, *shared_ranges;
    i64 *completes, *raw_of, *reader_of;
    unsigned char *in_window;
} Pass;

static i64 span(const Pass *p, i64 row, i64 index) { return p->spans[row * p->n + index]; }

/* One range of instruction `index`'s footprint (`ProgramFacts.footprint`). */
typedef struct {
    i64 mem, first, last, write;
} Range;

static int footprint(const Pass *p, i64 index, Range out[]) {
    i64 from = p->shared_offsets[index], to = p->shared_offsets[index + 1];
    int count = 0;
    if (from < to) {
        for (i64 r = from; r < to; r++) {
            const i64 *q = p->shared_ranges + 4 * r;
            out[count++] = (Range){q[0], q[1], q[2], q[3] != 0};
        }
        return count;
    }
    i64 mask = p->masks[index];
    for (i64 m = 0; m < p->memories; m++)
        if (mask >> m & 1)
            out[count++] = (Range){m, span(p, 2 * m, index), span(p, 2 * m + 1, index),
                                   mask >> (8 + m) & 1};
    return count;
}

/* `program_facts.overlap` of two instructions' footprints. */
static int footprints_overlap(const Pass *p, i64 a, i64 b, int most) {
    Range mine[most], theirs[most];
    int count_a = footprint(p, a, mine), count_b = footprint(p, b, theirs);
    for (int i = 0; i < count_a; i++)
        for (int j = 0; j < count_b; j++)
            if (mine[i].mem == theirs[j].mem && (mine[i].write || theirs[j].write)
                && mine[i].first <= theirs[j].last && theirs[j].first <= mine[i].last)
                return 1;
    return 0;
}

/* `_pass.remerge`: recompute deliveries from `position` (a new strobe there if `fresh`);
   keep in `stale` the earliest (reader, cycle) of a delivery that moved after it was used. */
static void remerge(Pass *p, State *s, i64 position, int fresh, Stale *stale) {
    Window *w = &s->window;
    i64 last = position ? w->data[position - 1].delivered : s->window_last;
    i64 known = fresh ? position + 1 : position;
    for (i64 j = position; j < w->len; j++) {
        Strobe *entry = &w->data[j];
        i64 cycle = entry->raw > last ? entry->raw : last + 1;
        if (j >= known) {
            if (cycle == entry->delivered) break;
            i64 older = entry->index;
            if (!entry->announced && p->raw_of[older] != NO_RAW) {
                i64 reader = p->reader_of[older];
                if (reader >= 0 && (!stale->set || reader < stale->reader)) {
                    stale->set = 1;
                    stale->reader = reader;
                    stale->cycle = entry->delivered < cycle ? entry->delivered : cycle;
                }
                p->completes[older] = cycle;
            }
        }
        entry->delivered = last = cycle;
    }
}

/* ---- the final merge check ------------------------------------------------------------ */

static int strobe_compare(const void *a, const void *b) {
    const Strobe *x = a, *y = b;
    return strobe_after(x, y) ? 1 : strobe_after(y, x) ? -1 : 0;
}

/* `_merge_agrees`: sort the strobes (insertion sort: they come nearly in order; qsort when
   they do not) and check d_k = max(t_k, d_(k-1) + 1) against `completes`. Return -1 when all
   agree, else an instruction whose delivery differs; -2 without memory. */
static i64 merge_disagrees(const Pass *p) {
    i64 count = 0;
    for (i64 i = 0; i < p->n; i++) count += p->kinds[i] >= K_COMPUTE;
    if (!count) return -1;
    Strobe *all = malloc((size_t)count * sizeof(Strobe));
    if (!all) return -2;
    i64 filled = 0, moves = 0;
    int sorted = 1;
    for (i64 i = 0; i < p->n; i++) {
        if (p->kinds[i] < K_COMPUTE) continue;
        Strobe item = {p->raw_of[i], p->kinds[i] == K_PRELOAD, i, 0, 0, 0, 0};
        i64 j = filled++;
        if (sorted) {
            while (j > 0 && strobe_after(&all[j - 1], &item)) {
                all[j] = all[j - 1];
                j--;
                if (++moves > 64 * count) sorted = 0;
            }
        }
        all[j] = item;
    }
    if (!sorted) qsort(all, (size_t)count, sizeof(Strobe), strobe_compare);
    i64 bad = -1, delivered = 0;
    for (i64 k = 0; k < count; k++) {
        i64 cycle = k && delivered + 1 > all[k].raw ? delivered + 1 : all[k].raw;
        delivered = cycle;
        if (all[k].raw == NO_RAW || p->completes[all[k].index] != cycle) {
            bad = all[k].index;
            break;
        }
    }
    free(all);
    return bad;
}

/* ---- the pass ------------------------------------------------------------------------- */

static int check_inputs(i64 n, const i64 *kinds, const i64 *units, const i64 *masks,
                        const i64 *ks, const i64 *shared_offsets, i64 shared_count, const i64 *params, i64 *failed) {
    if (params[P_ENTRIES] < 1 || params[P_DEPTH] < 1 || params[P_ROWS] < 1 || params[P_DIM] < 1
        || params[P_CHECKPOINT_EVERY] < 1 || params[P_CHECKPOINTS_KEPT] < 1
        || params[P_SHARED_BIT] < 16 || params[P_SHARED_BIT] > 62)
        return BAD_PARAMETER;
    if (shared_offsets[0] != 0 || shared_offsets[n] != shared_count) return BAD_PARAMETER;
    for (i64 i = 0; i < n; i++) {
        *failed = i;
        if (kinds[i] < 0 || kinds[i] >= KINDS || units[i] != UNIT_OF_KIND[kinds[i]])
            return BAD_INSTRUCTION;
        if (kinds[i] == K_COMPUTE_OS && ks[i] < 1) return BAD_INSTRUCTION;
        if (masks[i] < 0) return BAD_INSTRUCTION;
        i64 from = shared_offsets[i], to = shared_offsets[i + 1];
        if (from < 0 || to < from || to > shared_count || to - from > 8) return BAD_INSTRUCTION;
    }
    *failed = -1;
    return OK;
}

/* Time the n instructions (HALT excluded) described by the `ProgramFacts` arrays: kinds,
   units, masks, args, ks (n each), spans ((2 * memories) x n, row 2m: first rows in memory m,
   2m + 1: last rows), the shared footprints (instruction i's ranges are rows
   shared_offsets[i] .. shared_offsets[i + 1] - 1 of shared_ranges, 4 values each: memory,
   first, last, write). `params` (P_*), `ex_start` (the EXECUTE unit's reset state, `Execute`'s
   order), `lengths` (L_*: every array's element count). Fills accepts, issues, completes
   (n + 1 each, HALT last) and `results` (R_*). Returns OK or a code (*failed: the index of the
   instruction concerned, or -1). */
int timing_pass(i64 n, const i64 *kinds, const i64 *units, const i64 *masks, const i64 *args,
                const i64 *ks, i64 memories, const i64 *spans, const i64 *shared_offsets,
                i64 shared_count, const i64 *shared_ranges, const i64 *params, i64 params_count,
                const i64 *ex_start, i64 ex_count, const i64 *lengths, i64 lengths_count,
                i64 *accepts, i64 *issues, i64 *completes, i64 *results, i64 results_count,
                i64 *failed) {
    *failed = -1;
    if (params_count != P_COUNT || ex_count != EXECUTE_FIELDS || results_count != R_COUNT
        || lengths_count != L_COUNT || n < 0 || memories < 1 || memories > 8
        || shared_count < 0)
        return BAD_PARAMETER;
    const i64 expected[L_COUNT] = {n, n, n, n, n, 2 * memories * n, n + 1, 4 * shared_count,
                                   n + 1, n + 1, n + 1};
    for (int a = 0; a < L_COUNT; a++)
        if (lengths[a] != expected[a]) return BAD_PARAMETER;
    int code = check_inputs(n, kinds, units, masks, ks, shared_offsets, shared_count,
                            params, failed);
    if (code != OK) return code;
    const i64 entries = params[P_ENTRIES], depth = params[P_DEPTH];
    const i64 latency = params[P_LATENCY], rows = params[P_ROWS], dim = params[P_DIM];
    const i64 array_latency = params[P_ARRAY_LATENCY], os_drain = params[P_OS_DRAIN];
    const i64 shared_bit = params[P_SHARED_BIT], every = params[P_CHECKPOINT_EVERY];
    const i64 kept = params[P_CHECKPOINTS_KEPT], max_rollbacks = params[P_MAX_ROLLBACKS];
    const i64 all_memories = ((i64)1 << memories) - 1;
    const int most_ranges = (int)(memories > 8 ? memories : 8);

    Pass pass = {n, memories, all_memories, shared_bit, kinds, masks, spans, shared_offsets,
                 shared_ranges, completes, NULL, NULL, NULL};
    Pass *p = &pass;
    State s;
    memset(&s, 0, sizeof s);
    Checkpoint *checkpoints = calloc((size_t)(kept + 1), sizeof(Checkpoint));
    i64 *announced_cycle = malloc((size_t)(n ? n : 1) * sizeof(i64));
    unsigned char *announced = calloc((size_t)(n ? n : 1), 1);
    i64 *ends = NULL, ends_cap = 0;
    pass.raw_of = malloc((size_t)(n ? n : 1) * sizeof(i64));
    pass.reader_of = malloc((size_t)(n ? n : 1) * sizeof(i64));
    pass.in_window = calloc((size_t)(n ? n : 1), 1);
    s.recent = calloc((size_t)(UNITS * depth), sizeof(i64));
    code = NO_MEMORY;
    if (!checkpoints || !announced_cycle || !announced || !pass.raw_of || !pass.reader_of
        || !pass.in_window || !s.recent)
        goto done;
    for (i64 i = 0; i < n; i++) pass.raw_of[i] = NO_RAW, pass.reader_of[i] = -1;
    memcpy(&s.ex, ex_start, sizeof s.ex);
    s.window_last = -(i64)1000000000000000000LL;
    s.accept = params[P_FIRST_ACCEPT] - 1;
    i64 checkpoint_count = 0, rollbacks = 0, max_announced = -1;
    i64 index = 0, next_checkpoint = 0;

    while (index < n) {
        if (index == next_checkpoint) {
            next_checkpoint += every;
            Checkpoint *c = &checkpoints[checkpoint_count++];
            c->at = index;
            if (!state_copy(&c->state, &s, depth)) goto done;
            for (i64 q = 0; q < c->state.window.len; q++) {
                Strobe *e = &c->state.window.data[q];
                e->reader = p->reader_of[e->index];
                e->saved = completes[e->index];
            }
            if (checkpoint_count > kept) { /* keep the start and the latest */
                i64 drop = checkpoints[0].at ? 0 : 1;
                Checkpoint spare = checkpoints[drop];
                memmove(checkpoints + drop, checkpoints + drop + 1,
                        (size_t)(checkpoint_count - drop - 1) * sizeof(Checkpoint));
                checkpoints[--checkpoint_count] = spare; /* (its buffers, for reuse) */
            }
        }
        const i64 unit = units[index];
        const i64 offered = s.accept + 1;
        i64 t = offered;
        i64 flying = s.flights[0].len + s.flights[1].len + s.flights[2].len;
        if (flying >= entries) {
            flying = 0;
            for (int u = 0; u < UNITS; u++) {
                IndexList *list = &s.flights[u];
                i64 kept_here = 0;
                for (i64 q = 0; q < list->len; q++)
                    if (completes[list->data[q]] >= t) list->data[kept_here++] = list->data[q];
                list->len = kept_here;
                flying += kept_here;
            }
            if (flying >= entries) {
                if (!reserve((void **)&ends, &ends_cap, flying, sizeof(i64))) goto done;
                i64 count = 0;
                for (int u = 0; u < UNITS; u++)
                    for (i64 q = 0; q < s.flights[u].len; q++)
                        ends[count++] = completes[s.flights[u].data[q]];
                for (i64 a = 1; a < count; a++) { /* descending */
                    i64 value = ends[a], b = a;
                    while (b > 0 && ends[b - 1] < value) ends[b] = ends[b - 1], b--;
                    ends[b] = value;
                }
                t = ends[entries - 1] + 1;
                for (int u = 0; u < UNITS; u++)
                    for (i64 q = 0; q < s.flights[u].len; q++) {
                        i64 owner = s.flights[u].data[q];
                        if (p->in_window[owner] && p->reader_of[owner] < 0)
                            p->reader_of[owner] = index;
                    }
            }
        }
        i64 *queue = s.recent + unit * depth;
        i64 qhead = s.recent_head[unit], qlen = s.recent_len[unit];
        if (qlen == depth && queue[qhead] >= t) t = queue[qhead] + 1;
        if (t != offered) s.dispatch_stall += t - offered;
        s.accept = t;
        i64 head = t + 1;
        if (qlen) {
            i64 newest = queue[(qhead + qlen - 1) % depth];
            if (newest >= head) head = newest + 1;
        }
        /* the footprint is compared in t + 1, the mask recorded in t + 2 (HAZARD_CYCLES) */
        i64 clear = head > t + 3 ? head : t + 3;
        const i64 mask = masks[index];
        if (mask) {
            const i64 writes = mask >> 8 & all_memories;
            for (int v = 0; v < UNITS; v++) {
                if (v == unit) continue;
                const IndexList *list = &s.flights[v];
                for (i64 q = 0; q < list->len; q++) {
                    i64 owner = list->data[q];
                    i64 end = completes[owner];
                    if (end <= t || (end < clear && !p->in_window[owner])) continue;
                    i64 theirs = masks[owner];
                    i64 common = ((writes & theirs) | (mask & theirs >> 8)) & all_memories;
                    if (!common) continue;
                    if ((mask | theirs) & ((i64)1 << shared_bit)) {
                        if (!footprints_overlap(p, index, owner, most_ranges)) continue;
                    } else {
                        int hit = 0;
                        for (i64 m = 0; m < memories && !hit; m++)
                            hit = (common >> m & 1) && span(p, 2 * m, index)
                                  <= span(p, 2 * m + 1, owner) && span(p, 2 * m, owner)
                                  <= span(p, 2 * m + 1, index);
                        if (!hit) continue;
                    }
                    if (p->in_window[owner] && p->reader_of[owner] < 0)
                        p->reader_of[owner] = index;
                    if (end >= clear) clear = end + 1;
                }
            }
        }
        Stale stale = {0, 0, 0};
        i64 ready_from, issue, complete;
        if (unit == EX) {
            Execute *x = &s.ex;
            const i64 kind = kinds[index];
            i64 earliest = x->last_taken + 1, taken, raw, key;
            if (x->both && x->mode_os != (kind == K_COMPUTE_OS)) {
                /* a change of dataflow waits until the array has drained the other family */
                i64 gate;
                if (kind == K_COMPUTE_OS) {
                    gate = x->w_last + 1;
                    if (x->a_last + array_latency + 1 > gate) gate = x->a_last + array_latency + 1;
                } else {
                    gate = x->tile_end + os_drain + 1;
                }
                if (gate > earliest) earliest = gate;
                x->mode_os = kind == K_COMPUTE_OS;
            }
            ready_from = earliest;
            if (clear > earliest) earliest = clear;
            if (kind == K_COMPUTE) {
                const i64 m = args[index];
                if (x->slot_free > ready_from) ready_from = x->slot_free;
                taken = x->slot_free > earliest ? x->slot_free : earliest;
                i64 start = taken + 1 > x->a_free ? taken + 1 : x->a_free;
                x->slot_free = start;
                i64 first = x->a_last > start + 1 ? x->a_last : start + 1;
                i64 first_take = first + 1;
                if (x->closed) {
                    if (x->loaded + 1 > first_take) first_take = x->loaded + 1;
                    x->newest = first_take;
                }
                x->a_free = m == 1 ? first : first_take + m - 2;
                x->a_last = first_take + m - 1;
                x->closed = x->pending = 0;
                raw = first_take + m - 1 + array_latency;
                key = 0;
            } else if (kind == K_PRELOAD) {
                if (x->w_free > ready_from) ready_from = x->w_free;
                if (x->pending && x->slot_free > ready_from) ready_from = x->slot_free;
                taken = x->w_free > earliest ? x->w_free : earliest;
                if (x->pending && x->slot_free > taken) taken = x->slot_free;
                if (x->pending || taken > x->a_free) { /* a dummy row closes the tile */
                    i64 start = taken + 1 > x->a_free ? taken + 1 : x->a_free;
                    x->slot_free = start;
                    i64 first = x->a_last > start + 1 ? x->a_last : start + 1;
                    i64 first_take = first + 1;
                    if (x->closed) {
                        if (x->loaded + 1 > first_take) first_take = x->loaded + 1;
                        x->newest = first_take;
                    }
                    x->a_free = first;
                    x->a_last = first_take;
                }
                x->closed = 1;
                x->activated = x->newest;
                i64 first = x->w_last > taken + 1 ? x->w_last : taken + 1;
                i64 first_take = x->activated > first + 1 ? x->activated : first + 1;
                x->w_free = rows == 1 ? first : first_take + rows - 2;
                x->loaded = x->w_last = first_take + rows - 1;
                x->pending = 1;
                raw = x->loaded;
                key = 1;
            } else { /* COMPUTE.OS */
                const i64 m = args[index], k = ks[index];
                if (x->loader_free > ready_from) ready_from = x->loader_free;
                taken = x->loader_free > earliest ? x->loader_free : earliest;
                i64 load_start = taken + 1;
                const i64 last_chunk = (k - 1) / dim; /* (k >= 1) */
                for (i64 chunk = 0; chunk <= last_chunk; chunk++) {
                    i64 *bank = x->chunks & 1 ? &x->bank1 : &x->bank0;
                    load_start = (*bank > load_start ? *bank : load_start) + m;
                    if (x->beat_taken <= load_start) x->beat_taken = load_start + 1;
                    x->beat_taken += chunk < last_chunk ? dim : k - chunk * dim;
                    *bank = x->beat_taken - 1;
                    x->chunks++;
                }
                x->loader_free = load_start - 1;
                i64 final = x->tile_end + rows > x->beat_taken ? x->tile_end + rows
                                                               : x->beat_taken;
                x->beat_taken = x->tile_end = final;
                raw = final + os_drain;
                key = 0;
            }
            x->last_taken = issue = taken;
            p->raw_of[index] = raw;
            Window *w = &s.window;
            i64 drop = 0; /* no later strobe can come before these */
            while (drop < w->len && w->data[drop].raw < t) {
                s.window_last = w->data[drop].delivered;
                p->reader_of[w->data[drop].index] = -1;
                p->in_window[w->data[drop].index] = 0;
                drop++;
            }
            if (drop) {
                memmove(w->data, w->data + drop, (size_t)(w->len - drop) * sizeof(Strobe));
                w->len -= drop;
            }
            i64 item = -1;
            if (announced[index]) {
                announced_cycle[index] = raw;
                i64 position = window_find(w, index);
                if (position >= 0) {
                    if (w->data[position].raw == raw) {
                        w->data[position].announced = 0;
                        item = position;
                    } else {
                        window_delete(w, position);
                        p->in_window[index] = 0;
                        remerge(p, &s, position, 0, &stale);
                    }
                }
            }
            if (item < 0) {
                Strobe fresh = {raw, key, index, 0, 0, -1, 0};
                p->in_window[index] = 1;
                if (!w->len || strobe_after(&fresh, &w->data[w->len - 1])) {
                    i64 last = w->len ? w->data[w->len - 1].delivered : s.window_last;
                    fresh.delivered = raw > last ? raw : last + 1;
                    if (!window_insert(w, w->len, fresh)) goto done;
                    item = w->len - 1;
                } else {
                    item = window_bisect(w, &fresh);
                    if (!window_insert(w, item, fresh)) goto done;
                    remerge(p, &s, item, 1, &stale);
                }
            }
            complete = w->data[item].delivered;
        } else if (unit == LD) {
            ready_from = s.free_ld;
            issue = s.free_ld > clear ? s.free_ld : clear;
            const i64 cost = args[index];
            s.free_ld = issue + (cost > 2 ? cost : 2);
            complete = issue + cost + latency;
        } else {
            ready_from = s.free_st;
            issue = s.free_st > clear ? s.free_st : clear;
            complete = issue + args[index];
            s.free_st = complete + 1;
        }
        if (clear > head) {
            i64 stalled = clear - (ready_from > head ? ready_from : head);
            if (stalled > 0) s.hazard[unit] += stalled;
        }
        if (qlen == depth) { /* deque(maxlen=depth).append */
            queue[qhead] = issue;
            s.recent_head[unit] = (qhead + 1) % depth;
        } else {
            queue[(qhead + qlen) % depth] = issue;
            s.recent_len[unit] = qlen + 1;
        }
        if (!list_push(&s.flights[unit], index)) goto done;
        accepts[index] = s.accept;
        issues[index] = issue;
        completes[index] = complete;
        if (!stale.set) {
            index++;
            continue;
        }
        /* A delivery some instruction used has moved: go back before that use, knowing the
           strobes before the moved delivery (every event before it was exact). */
        while (stale.set) {
            if (++rollbacks > max_rollbacks) {
                code = UNSETTLED;
                *failed = index;
                goto done;
            }
            const i64 reader = stale.reader, horizon = stale.cycle;
            for (i64 j = reader + 1; j <= index; j++) {
                i64 cycle = p->raw_of[j];
                if (cycle != NO_RAW && cycle < horizon) {
                    announced[j] = 1;
                    announced_cycle[j] = cycle;
                    if (j > max_announced) max_announced = j;
                }
            }
            i64 at = checkpoint_count - 1;
            while (at > 0 && checkpoints[at].at > reader) at--;
            const i64 back = checkpoints[at].at;
            for (i64 q = 0; q < s.window.len; q++) {
                p->in_window[s.window.data[q].index] = 0;
                p->reader_of[s.window.data[q].index] = -1;
            }
            if (!state_copy(&s, &checkpoints[at].state, depth)) goto done;
            checkpoint_count = at; /* (the slot's buffers stay for the next checkpoint) */
            for (i64 j = back; j <= index; j++) p->raw_of[j] = NO_RAW;
            for (i64 q = 0; q < s.window.len; q++) {
                const Strobe *e = &s.window.data[q];
                if (!e->announced) completes[e->index] = e->saved;
                p->in_window[e->index] = 1;
                p->reader_of[e->index] = e->reader;
            }
            index = next_checkpoint = back;
            stale.set = 0;
            for (i64 j = back; j <= max_announced; j++) {
                if (!announced[j]) continue;
                const i64 cycle = announced_cycle[j];
                i64 position = window_find(&s.window, j);
                if (position >= 0) {
                    if (s.window.data[position].raw == cycle) continue;
                    window_delete(&s.window, position);
                    remerge(p, &s, position, 0, &stale);
                }
                Strobe fresh = {cycle, kinds[j] == K_PRELOAD, j, 0, 1, -1, 0};
                position = window_bisect(&s.window, &fresh);
                if (!window_insert(&s.window, position, fresh)) goto done;
                p->in_window[j] = 1;
                remerge(p, &s, position, 1, &stale);
            }
        }
    }
    {
        i64 bad = merge_disagrees(p);
        if (bad == -2) goto done;
        if (bad >= 0) {
            code = MERGE_DIFFERS;
            *failed = bad;
            goto done;
        }
    }
    i64 latest = 0;
    for (i64 i = 0; i < n; i++)
        if (completes[i] > latest) latest = completes[i];
    i64 halt = s.accept + 1 > latest + 1 ? s.accept + 1 : latest + 1;
    accepts[n] = issues[n] = completes[n] = halt;
    for (int u = 0; u < UNITS; u++) { /* `_union_lengths` */
        i64 busy = 0, run_start = 0, high = 0;
        int open = 0;
        for (i64 i = 0; i < n; i++) {
            if (units[i] != u) continue;
            if (!open) {
                run_start = issues[i], high = completes[i], open = 1;
            } else if (issues[i] > high) {
                busy += high - run_start;
                run_start = issues[i], high = completes[i];
            } else if (completes[i] > high) {
                high = completes[i];
            }
        }
        if (open) busy += high - run_start;
        results[R_BUSY_LD + u] = busy;
    }
    results[R_DISPATCH_STALL] = s.dispatch_stall;
    for (int u = 0; u < UNITS; u++) results[R_HAZARD_LD + u] = s.hazard[u];
    results[R_HALT] = halt;
    results[R_ROLLBACKS] = rollbacks;
    code = OK;
done:
    if (checkpoints)
        for (i64 c = 0; c <= kept; c++) state_free(&checkpoints[c].state);
    free(checkpoints);
    state_free(&s);
    free(announced_cycle);
    free(announced);
    free(ends);
    free(pass.raw_of);
    free(pass.reader_of);
    free(pass.in_window);
    return code;
}

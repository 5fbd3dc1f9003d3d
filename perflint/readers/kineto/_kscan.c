/* Optional C speed-up of the Kineto reader: one slice of the traceEvents array -> columns.

   `scan(buf, lo, hi)` reads the events in buf[lo:hi] (whole events separated by commas, as the
   chunked reader cuts them) and returns, per event, the fields the strict schema
   (schema.StrictEvent) would decode, as columns, plus the slice's distinct strings,
   raw JSON values and (pid, tid) pairs. It stops at the first event it is not certain to read
   exactly as the msgspec path does: a value of a type the strict schema refuses, a phase it
   does not know, a duplicate or escaped key, a number it cannot convert exactly (the event is
   skipped whole and the caller hands just it to msgspec), or invalid JSON or UTF-8 (the caller
   hands msgspec the rest of the slice, which also words the error). So this module only ever
   answers the common case faster.

   GPU-only fields (device, stream, registers, ...) are untyped in the strict schema and have
   conversion rules of their own in strict.py; values those rules would convert (a string
   stream, a float register count) set the event's ODD flag instead, and the caller hands a GPU
   event with it to msgspec. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The rows scan() fills, per type, in the order of the column specification's SCANNER_ROWS
   (perflint/readers/kineto/columns.py). The module's ROWS names them; the Python side refuses a
   build whose ROWS differ, and a test compares the two. */
#define F64_ROWS(X) X(F_TS, "ts") X(F_DUR, "dur") X(F_BPS, "blocks_per_sm") X(F_WPS, "warps_per_sm") X(F_OCC, "occupancy")
#define I64_ROWS(X)                                                                                                     \
    X(I_EXT, "ext_id") X(I_FWD, "fwd_tid") X(I_SEQ, "seq") X(I_DEV, "device") X(I_STREAM, "stream")                   \
    X(I_CORR, "correlation") X(I_REGS, "regs") X(I_SHMEM, "shmem") X(I_G0, "grid.x") X(I_G1, "grid.y")              \
    X(I_G2, "grid.z") X(I_B0, "block.x") X(I_B1, "block.y") X(I_B2, "block.z") X(I_NBYTES, "nbytes")                 \
    X(I_MEM_BYTES, "mem_bytes") X(I_TOTAL_ALLOC, "total_allocated") X(I_TOTAL_RES, "total_reserved")                  \
    X(I_DEV_TYPE, "device_type") X(I_DEV_ID, "device_id") X(I_WAIT_STREAM, "wait_stream") X(I_WAIT_CORR, "wait_corr")
/* S_CAT ("kind"): the category's string id, which the kind column is read from */
#define I32_ROWS(X)                                                                                                     \
    X(S_CAT, "kind") X(S_NAME, "name") X(S_PAIR, "thread") X(S_DIMS, "dims") X(S_TYPES, "types")                      \
    X(S_CONC, "concrete") X(S_COLL, "collective") X(S_STACK, "stack")
#define U8_ROWS(X) X(U_PH, "ph") X(U_ODD, "odd")
/* The rest of a collective's metadata, kept only for the events with a Collective name: one
   record each (its event's index, then these), beside the rows (the module's COMM_ROWS names
   them, in the order of the column specification's SCANNER_COMM_ROWS). */
#define COMM_I64(X)                                                                                                     \
    X(C_IN, "in_nelems") X(C_OUT, "out_nelems") X(C_GSIZE, "group_size") X(C_SEQ, "comm_seq") X(C_RSTART, "rank_start") \
    X(C_RSTRIDE, "rank_stride")
#define COMM_I32(X) X(C_DTYPE, "comm_dtype") X(C_PG_NAME, "pg_name") X(C_PG_DESC, "pg_desc") X(C_PG_RANKS, "pg_ranks")
#define AS_ENUM(id, name) id,
#define AS_NAME(id, name) name,
enum { F64_ROWS(AS_ENUM) NF };
enum { I64_ROWS(AS_ENUM) NI };
enum { I32_ROWS(AS_ENUM) NS };
enum { U8_ROWS(AS_ENUM) NU };
enum { COMM_I64(AS_ENUM) NCI };
enum { COMM_I32(AS_ENUM) NCS };
enum { PH_SKIP, PH_X, PH_MEMORY }; /* U_PH: a phase the tables skip, a complete event, a [memory] record */

#define MAX_DEPTH 256
enum { INVALID = 1, NOMEM = 2, REFUSED = 3 }; /* Scan.bad */
#define NONE_ID (-1)

typedef struct {
    const char *p;  /* start of the span (string contents without quotes, or a raw value) */
    Py_ssize_t n;
    uint64_t h;
    int esc;        /* the string has escapes: decode them */
} Span;

typedef struct {
    Span *items;
    Py_ssize_t len, cap;
    int32_t *slots; /* open addressing, -1 empty */
    Py_ssize_t nslots;
} Table;

typedef struct {
    int8_t pk, tk;  /* 0 none, 1 int, 2 str */
    int64_t pv, tv; /* the int, or the string's local id */
    uint64_t h;
} Pair;

typedef struct {
    Pair *items;
    Py_ssize_t len, cap;
    int32_t *slots;
    Py_ssize_t nslots;
} PairTable;

/* Keys seen lately, with their quotes, and which key followed which: Kineto writes each kind
   of event with its keys in one order, so the next key is usually the one that came after
   this one last time, and one memcmp recognises it without scanning the string. */
#define KC_SLOTS 48
#define KC_TEXT 40
#define KC_START KC_SLOTS
typedef struct {
    char text[KC_SLOTS][KC_TEXT];
    uint8_t n[KC_SLOTS];
    int8_t id[KC_SLOTS];
    uint8_t next[KC_SLOTS + 1]; /* the slot that followed slot i (KC_START: an object's first) */
    int used;
} KeyCache;

typedef struct {
    const char *p, *end;
    int bad;
    Py_ssize_t n, cap;
    double *F[NF];
    int64_t *I[NI];
    int32_t *S[NS];
    uint8_t *U[NU];
    int64_t *offs;  /* each event's offset in the buffer; offs[n]: where the scan stopped */
    int64_t *cev, *ci; /* collective records: the event's index; NCI counts per record */
    int32_t *cs;       /* NCS string ids per record */
    Py_ssize_t nc, ccap;
    int own;        /* 1 + the index of the spare buffers in use (scan_free keeps them), or 0 */
    KeyCache top, args; /* kept with the spare buffers */
    Table strs, raws;
    PairTable pairs;
} Scan;

static const char NONE_TEXT[] = "None";
static const char EMPTY_TEXT[] = "";

/* ------------------------------------------------------------------ hashing and tables */

static inline uint64_t load8(const char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* A word at a time (strings here are names tens to hundreds of bytes long), then a final mix. */
static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        h ^= load8(s + i);
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, s + i, (size_t)(n - i));
        h ^= w;
        h *= 0x94d049bb133111ebULL;
    }
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return h;
}

/* Twice the slots (at least `first`), the items [0, len) placed again by their hashes (the
   uint64_t at `hoff` in each item, items `stride` bytes apart). Both tables below use it. */
static int slots_grow(int32_t **slots, Py_ssize_t *nslots, Py_ssize_t first, const void *items, size_t stride,
                      size_t hoff, Py_ssize_t len) {
    Py_ssize_t ns = *nslots ? *nslots * 2 : first;
    int32_t *grown = (int32_t *)malloc(sizeof(int32_t) * ns);
    if (!grown) return -1;
    memset(grown, 0xff, sizeof(int32_t) * ns);
    for (Py_ssize_t i = 0; i < len; i++) {
        uint64_t h;
        memcpy(&h, (const char *)items + (size_t)i * stride + hoff, sizeof(h));
        Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(ns - 1));
        while (grown[j] >= 0) j = (j + 1) & (ns - 1);
        grown[j] = (int32_t)i;
    }
    free(*slots);
    *slots = grown;
    *nslots = ns;
    return 0;
}

/* Room for one more item in a table's item array (doubled when full, `first` items at first);
   -1 on allocation failure. Both hash tables keep their items this way. */
static int items_room(void **items, Py_ssize_t *cap, Py_ssize_t len, size_t size, Py_ssize_t first) {
    if (len < *cap) return 0;
    Py_ssize_t grown = *cap ? *cap * 2 : first;
    void *p = realloc(*items, size * (size_t)grown);
    if (!p) return -1;
    *items = p;
    *cap = grown;
    return 0;
}

static int table_grow(Table *t) {
    return slots_grow(&t->slots, &t->nslots, 256, t->items, sizeof(Span), offsetof(Span, h), t->len);
}

/* The local id of a span (added when new); -1 on allocation failure. */
static int32_t table_id(Table *t, const char *p, Py_ssize_t n, int esc) {
    if ((t->len + 1) * 2 > t->nslots && table_grow(t) < 0) return -1;
    uint64_t h = hash_bytes(p, n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    for (;;) {
        int32_t k = t->slots[j];
        if (k < 0) break;
        Span *s = &t->items[k];
        if (s->h == h && s->n == n && memcmp(s->p, p, (size_t)n) == 0) return k;
        j = (j + 1) & (t->nslots - 1);
    }
    if (items_room((void **)&t->items, &t->cap, t->len, sizeof(Span), 64) < 0) return -1;
    Span *s = &t->items[t->len];
    s->p = p;
    s->n = n;
    s->h = h;
    s->esc = esc;
    t->slots[j] = (int32_t)t->len;
    return (int32_t)t->len++;
}

static uint64_t hash_pair(const Pair *q) {
    uint64_t h = (uint64_t)q->pk * 0x9e3779b97f4a7c15ULL ^ (uint64_t)q->pv;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= ((uint64_t)q->tk << 56) ^ (uint64_t)q->tv;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

static int pairs_grow(PairTable *t) {
    return slots_grow(&t->slots, &t->nslots, 64, t->items, sizeof(Pair), offsetof(Pair, h), t->len);
}

static int32_t pair_id(PairTable *t, Pair *q) {
    if ((t->len + 1) * 2 > t->nslots && pairs_grow(t) < 0) return -1;
    uint64_t h = q->h = hash_pair(q);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    for (;;) {
        int32_t k = t->slots[j];
        if (k < 0) break;
        Pair *s = &t->items[k];
        if (s->h == h && s->pk == q->pk && s->tk == q->tk && s->pv == q->pv && s->tv == q->tv) return k;
        j = (j + 1) & (t->nslots - 1);
    }
    if (items_room((void **)&t->items, &t->cap, t->len, sizeof(Pair), 16) < 0) return -1;
    t->items[t->len] = *q;
    t->slots[j] = (int32_t)t->len;
    return (int32_t)t->len++;
}

/* ------------------------------------------------------------------ JSON tokens */

static inline void ws(Scan *s) {
    const char *p = s->p, *e = s->end;
    /* one compare in the common case: compact JSON has no whitespace between tokens */
    if (p >= e || (unsigned char)*p > ' ') return;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    s->p = p;
}

/* Bytes [p, e) of a string's contents hold only valid UTF-8 (checked for non-ASCII runs). */
static int utf8_ok(const unsigned char *p, const unsigned char *e) {
    while (p < e) {
        unsigned c = *p;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xc2 && c <= 0xdf) {
            if (e - p < 2 || (p[1] & 0xc0) != 0x80) return 0;
            p += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (e - p < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) return 0;
            if (c == 0xe0 && p[1] < 0xa0) return 0; /* overlong */
            if (c == 0xed && p[1] > 0x9f) return 0; /* surrogate */
            p += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (e - p < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) return 0;
            if (c == 0xf0 && p[1] < 0x90) return 0;
            if (c == 0xf4 && p[1] > 0x8f) return 0;
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static inline int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The first byte in [p, e) that is a quote, a backslash, a control or a non-ASCII byte (e if
   none): sixteen bytes at a time with SSE2 (every x86-64 has it), else eight by word tricks. */
static inline const char *plain_run(const char *p, const char *e) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (e - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* signed compare: below 0x20, or 0x80 and up (negative) */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmplt_epi8(v, space));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m) return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    while (e - p >= 8) {
        uint64_t w = load8(p);
        uint64_t q = w ^ 0x2222222222222222ULL, b = w ^ 0x5c5c5c5c5c5c5c5cULL;
        uint64_t hit = (((q - 0x0101010101010101ULL) & ~q) | ((b - 0x0101010101010101ULL) & ~b) |
                        (w - 0x2020202020202020ULL) | w) & 0x8080808080808080ULL;
        /* exact at the lowest flagged byte: no borrow reaches it from the plain bytes below */
        if (hit) return p + (__builtin_ctzll(hit) >> 3);
        p += 8;
    }
    while (p < e && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 && *p != '"' && *p != '\\') p++;
    return p;
}

/* A string at s->p (its opening quote): its contents' span; s->bad on invalid text. Escapes
   are checked here; \u escapes of surrogates are refused (left to the msgspec path). */
static int string(Scan *s, Span *out) {
    const char *p = s->p + 1, *e = s->end;
    const char *start = p;
    int esc = 0, high = 0;
    for (;;) {
        p = plain_run(p, e);
        if (p >= e || (unsigned char)*p < 0x20) { s->bad = 1; return -1; }
        if ((unsigned char)*p >= 0x80) { /* checked as UTF-8 at the end */
            high = 0x80;
            p++;
            continue;
        }
        if (*p == '"') break;
        /* a backslash */
        esc = 1;
        if (p + 1 >= e) { s->bad = 1; return -1; }
        char c = p[1];
        if (c == 'u') {
            if (p + 6 > e) { s->bad = 1; return -1; }
            int v = 0;
            for (int i = 2; i < 6; i++) {
                int h = hexval(p[i]);
                if (h < 0) { s->bad = 1; return -1; }
                v = v * 16 + h;
            }
            if (v >= 0xd800 && v <= 0xdfff) { s->bad = 1; return -1; }
            p += 6;
        } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
            p += 2;
        } else {
            s->bad = 1;
            return -1;
        }
    }
    if ((high & 0x80) && !utf8_ok((const unsigned char *)start, (const unsigned char *)p)) { s->bad = 1; return -1; }
    out->p = start;
    out->n = p - start;
    out->esc = esc;
    s->p = p + 1;
    return 0;
}

typedef struct {
    int is_int;   /* no fraction, no exponent */
    int fits;     /* is_int and within int64 */
    int64_t i;
    double d;     /* the value as a double; NaN when it cannot be had exactly (caller refuses) */
} Num;

/* Eight ASCII digits (little-endian word, the first digit in the low byte) as their value:
   pairs, then quads, then the eight, by multiplications (as in fast_float). */
static inline uint64_t eight_digits(uint64_t w) {
    const uint64_t mask = 0x000000FF000000FFULL;
    const uint64_t mul1 = 0x000F424000000064ULL; /* 100 + (1000000 << 32) */
    const uint64_t mul2 = 0x0000271000000001ULL; /* 1 + (10000 << 32) */
    w -= 0x3030303030303030ULL;
    w = (w * 10) + (w >> 8);
    return (((w & mask) * mul1) + (((w >> 16) & mask) * mul2)) >> 32;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number at s->p, in the JSON grammar exactly. Floats are correctly rounded: the
   exact fast path (an integer mantissa below 2^53 times or over an exact power of ten), else
   strtod (glibc's is correctly rounded; the C locale's decimal point is '.'). */
static int number(Scan *s, Num *out) {
    const char *p = s->p, *e = s->end, *start = p;
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e) { s->bad = 1; return -1; }
    uint64_t mant = 0;
    int digits = 0, frac_digits = 0;
    if (*p == '0') {
        p++;
        if (p < e && *p >= '0' && *p <= '9') { s->bad = 1; return -1; }
    } else if (*p >= '1' && *p <= '9') {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* eight digits at a time while they fit (timestamps have sixteen) */
        while (digits <= 8 && e - p >= 8) {
            uint64_t w = load8(p);
            if (((w + 0x4646464646464646ULL) | (w - 0x3030303030303030ULL)) & 0x8080808080808080ULL) break;
            mant = mant * 100000000ULL + eight_digits(w);
            digits += 8;
            p += 8;
        }
#endif
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 19) mant = mant * 10 + (uint64_t)(*p - '0');
            digits++;
            p++;
        }
    } else {
        s->bad = 1;
        return -1;
    }
    int is_int = 1;
    if (p < e && *p == '.') {
        is_int = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9') { s->bad = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 19) mant = mant * 10 + (uint64_t)(*p - '0');
            if (digits > 0 || *p != '0' || mant != 0) digits++;
            frac_digits++;
            p++;
        }
    }
    int exp = 0, has_exp = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        has_exp = 1;
        p++;
        int eneg = 0;
        if (p < e && (*p == '+' || *p == '-')) { eneg = *p == '-'; p++; }
        if (p >= e || *p < '0' || *p > '9') { s->bad = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') {
            if (exp < 100000) exp = exp * 10 + (*p - '0');
            p++;
        }
        if (eneg) exp = -exp;
    }
    s->p = p;
    out->is_int = is_int;
    out->fits = 0;
    out->d = NAN;
    if (is_int) {
        if (digits <= 18 || (digits == 19 && mant <= (uint64_t)INT64_MAX)) {
            out->fits = 1;
            out->i = neg ? -(int64_t)mant : (int64_t)mant;
            out->d = (double)out->i;
        }
        return 0;
    }
    (void)has_exp;
    /* digits counts significant digits (leading fraction zeros after "0." skipped); mant
       holds them when there are at most 19. */
    int e10 = exp - frac_digits;
    if (digits <= 19 && mant < (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)mant;
        d = e10 < 0 ? d / POW10[-e10] : d * POW10[e10];
        out->d = neg ? -d : d;
        return 0;
    }
    Py_ssize_t len = p - start;
    char tmp[72];
    if (len >= (Py_ssize_t)sizeof(tmp)) return 0; /* NaN: refused by the caller */
    memcpy(tmp, start, (size_t)len);
    tmp[len] = 0;
    char *endp;
    errno = 0;
    double d = strtod(tmp, &endp);
    if (endp != tmp + len || errno != 0 || !isfinite(d)) return 0;
    out->d = d;
    return 0;
}

/* A JSON number at s->p, checked against the grammar only: a value nothing reads needs no
   conversion (a timestamp with a fraction would cost a strtod). A twin of number()'s scan on
   purpose: number() with a "no conversion" flag measured 8% more instructions per slice
   (callgrind, 356M vs 330M over 16 MB), the hot path being compiled differently. */
static int skip_number(Scan *s) {
    const char *p = s->p, *e = s->end;
    if (p < e && *p == '-') p++;
    if (p >= e) { s->bad = 1; return -1; }
    if (*p == '0') {
        p++;
        if (p < e && *p >= '0' && *p <= '9') { s->bad = 1; return -1; }
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9') p++;
    } else {
        s->bad = 1;
        return -1;
    }
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') { s->bad = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') { s->bad = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    s->p = p;
    return 0;
}

static int skip_value(Scan *s, int depth);

static int skip_container(Scan *s, int depth, char close) {
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) { s->p++; return 0; }
    for (;;) {
        if (close == '}') {
            Span k;
            if (s->p >= s->end || *s->p != '"' || string(s, &k) < 0) { s->bad = 1; return -1; }
            ws(s);
            if (s->p >= s->end || *s->p != ':') { s->bad = 1; return -1; }
            s->p++;
            ws(s);
        }
        if (skip_value(s, depth + 1) < 0) return -1;
        ws(s);
        if (s->p >= s->end) { s->bad = 1; return -1; }
        if (*s->p == ',') { s->p++; ws(s); continue; }
        if (*s->p == close) { s->p++; return 0; }
        s->bad = 1;
        return -1;
    }
}

static int literal(Scan *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) { s->bad = 1; return -1; }
    s->p += n;
    return 0;
}

/* Any JSON value, checked and skipped. */
static int skip_value(Scan *s, int depth) {
    if (depth > MAX_DEPTH || s->p >= s->end) { s->bad = 1; return -1; }
    char c = *s->p;
    if (c == '{') return skip_container(s, depth, '}');
    if (c == '[') return skip_container(s, depth, ']');
    if (c == '"') { Span sp; return string(s, &sp); }
    if (c == 't') return literal(s, "true", 4);
    if (c == 'f') return literal(s, "false", 5);
    if (c == 'n') return literal(s, "null", 4);
    return skip_number(s);
}

/* ------------------------------------------------------------------ one event */

/* What a value turned out to be, for the fields whose type decides what happens. */
enum { V_MISSING, V_NULL, V_INT, V_FLOAT, V_STR, V_OTHER };

typedef struct {
    int kind;
    int64_t i;   /* V_INT that fits int64 (an int that does not is V_OTHER) */
    double d;    /* V_INT / V_FLOAT: the value as a double */
    Span str;    /* V_STR */
} Val;

/* A scalar value: its kind and value; containers and literals are skipped as V_OTHER. */
static int value(Scan *s, Val *v) {
    if (s->p >= s->end) { s->bad = 1; return -1; }
    char c = *s->p;
    if (c == '"') {
        v->kind = V_STR;
        return string(s, &v->str);
    }
    if (c == 'n') {
        v->kind = V_NULL;
        return literal(s, "null", 4);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        Num num;
        if (number(s, &num) < 0) return -1;
        if (num.is_int) {
            if (!num.fits) { v->kind = V_OTHER; return 0; }
            v->kind = V_INT;
            v->i = num.i;
            v->d = num.d;
        } else {
            v->kind = isnan(num.d) ? V_OTHER : V_FLOAT;
            v->d = num.d;
        }
        return 0;
    }
    v->kind = V_OTHER;
    return skip_value(s, 1);
}

/* An array of exactly three int64 ints; 0 when it is anything else (still skipped, checked). */
static int dim3(Scan *s, int64_t out[3], int *ok) {
    *ok = 0;
    if (s->p >= s->end || *s->p != '[') return skip_value(s, 1);
    const char *save = s->p;
    s->p++;
    for (int i = 0; i < 3; i++) {
        ws(s);
        Val v;
        if (s->p >= s->end) { s->bad = 1; return -1; }
        if (*s->p == ']' && i == 0) break;
        if (value(s, &v) < 0) return -1;
        if (v.kind != V_INT) goto generic;
        out[i] = v.i;
        ws(s);
        if (s->p >= s->end) { s->bad = 1; return -1; }
        if (i < 2) {
            if (*s->p != ',') goto generic;
            s->p++;
        } else if (*s->p == ']') {
            s->p++;
            *ok = 1;
            return 0;
        } else {
            goto generic;
        }
    }
generic:
    s->p = save;
    return skip_value(s, 1);
}

/* Keys of the args object the columns read ([memory] records' last); the module's ARG_KEYS names
   them, and its import checks that arg_key() finds each. */
#define ARG_KEYS(X)                                                                                                     \
    X(A_EXT, "External id") X(A_DIMS, "Input Dims") X(A_TYPES, "Input type") X(A_CONC, "Concrete Inputs")            \
    X(A_FWD, "Fwd thread id") X(A_SEQ, "Sequence number") X(A_DEV, "device") X(A_STREAM, "stream")                    \
    X(A_CORR, "correlation") X(A_REGS, "registers per thread") X(A_SHMEM, "shared memory") X(A_BPS, "blocks per SM") \
    X(A_WPS, "warps per SM") X(A_GRID, "grid") X(A_BLOCK, "block") X(A_OCC, "est. achieved occupancy %")             \
    X(A_NBYTES, "bytes") X(A_COLL, "Collective name") X(A_STACK, "Call stack") X(A_EXT_LC, "external id")            \
    X(A_MEM_BYTES, "Bytes") X(A_TOTAL_ALLOC, "Total Allocated") X(A_TOTAL_RES, "Total Reserved")                      \
    X(A_DEV_TYPE, "Device Type") X(A_DEV_ID, "Device Id") X(A_WAIT_STREAM, "wait_on_stream")                        \
    X(A_WAIT_CORR, "wait_on_cuda_event_record_corr_id") X(A_IN, "In msg nelems") X(A_OUT, "Out msg nelems")          \
    X(A_GSIZE, "Group size") X(A_DTYPE, "dtype") X(A_PG_NAME, "Process Group Name")                                   \
    X(A_PG_DESC, "Process Group Description") X(A_PG_RANKS, "Process Group Ranks") X(A_CSEQ, "Seq")                  \
    X(A_RSTART, "Global rank start") X(A_RSTRIDE, "Global rank stride")
enum { ARG_KEYS(AS_ENUM) A_NONE };
static const char *const arg_names[] = {ARG_KEYS(AS_NAME)};
/* member() marks the keys seen in a 64-bit set */
_Static_assert(A_NONE <= 64, "more arg keys than bits in `seen`");

static int arg_key(const char *k, Py_ssize_t n) {
#define K(lit, id) if (n == (Py_ssize_t)sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0) return id
    switch (n) {
    case 3: K("Seq", A_CSEQ); break;
    case 4: K("grid", A_GRID); break;
    case 5: K("block", A_BLOCK); K("bytes", A_NBYTES); K("Bytes", A_MEM_BYTES); K("dtype", A_DTYPE); break;
    case 6: K("device", A_DEV); K("stream", A_STREAM); break;
    case 9: K("Device Id", A_DEV_ID); break;
    case 10:
        K("Input Dims", A_DIMS); K("Input type", A_TYPES); K("Call stack", A_STACK); K("Group size", A_GSIZE);
        break;
    case 11: K("External id", A_EXT); K("correlation", A_CORR); K("external id", A_EXT_LC); K("Device Type", A_DEV_TYPE); break;
    case 14: K("Total Reserved", A_TOTAL_RES); K("wait_on_stream", A_WAIT_STREAM); K("Out msg nelems", A_OUT); break;
    case 12: K("warps per SM", A_WPS); break;
    case 13:
        K("Fwd thread id", A_FWD); K("shared memory", A_SHMEM); K("blocks per SM", A_BPS); K("In msg nelems", A_IN);
        break;
    case 17: K("Global rank start", A_RSTART); break;
    case 18: K("Process Group Name", A_PG_NAME); K("Global rank stride", A_RSTRIDE); break;
    case 19: K("Process Group Ranks", A_PG_RANKS); break;
    case 15:
        K("Sequence number", A_SEQ); K("Collective name", A_COLL); K("Total Allocated", A_TOTAL_ALLOC);
        K("Concrete Inputs", A_CONC);
        break;
    case 20: K("registers per thread", A_REGS); break;
    case 25: K("est. achieved occupancy %", A_OCC); K("Process Group Description", A_PG_DESC); break;
    case 33: K("wait_on_cuda_event_record_corr_id", A_WAIT_CORR); break;
    }
#undef K
    return A_NONE;
}

enum { E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ARGS, E_CODE, E_NONE };

static int event_key(const char *k, Py_ssize_t n) {
    switch (n) {
    case 2: if (k[0] == 'p' && k[1] == 'h') return E_PH; if (k[0] == 't' && k[1] == 's') return E_TS; break;
    case 3:
        if (memcmp(k, "cat", 3) == 0) return E_CAT;
        if (memcmp(k, "pid", 3) == 0) return E_PID;
        if (memcmp(k, "tid", 3) == 0) return E_TID;
        if (memcmp(k, "dur", 3) == 0) return E_DUR;
        break;
    case 4: if (memcmp(k, "name", 4) == 0) return E_NAME; if (memcmp(k, "args", 4) == 0) return E_ARGS; break;
    case 21: if (memcmp(k, "perflint: event class", 21) == 0) return E_CODE; break;
    }
    return E_NONE;
}

/* a[0:n] == the cached key text b[0:n] (n < KC_TEXT), a word at a time where `avail` bytes at a
   allow it: a libc memcmp call costs more than these short keys (about ten per event). */
static inline int key_eq(const char *a, Py_ssize_t avail, const char *b, Py_ssize_t n) {
    if (avail < ((n + 7) & ~(Py_ssize_t)7)) return memcmp(a, b, (size_t)n) == 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (load8(a + i) != load8(b + i)) return 0;
    if (i < n && ((load8(a + i) ^ load8(b + i)) & (~0ULL >> (8 * (8 - (n - i)))))) return 0;
    return 1;
}

/* The next key of an object (s->p at its opening quote): its id by `lookup`, and its slot in
   the cache (-1 when it is not cached). -2: invalid JSON; -3: an escaped key (refused). */
static int next_key(Scan *s, KeyCache *kc, int prev, int (*lookup)(const char *, Py_ssize_t), int *id) {
    int guess = kc->next[prev];
    if (guess < kc->used) {
        Py_ssize_t n = kc->n[guess];
        if (s->end - s->p > n && key_eq(s->p, s->end - s->p, kc->text[guess], n)) {
            s->p += n;
            *id = kc->id[guess];
            return guess;
        }
    }
    const char *q = s->p;
    Span k;
    if (s->p >= s->end || *s->p != '"' || string(s, &k) < 0) { s->bad = 1; return -2; }
    if (k.esc) return -3; /* msgspec would match the unescaped key */
    *id = lookup(k.p, k.n);
    Py_ssize_t n = s->p - q; /* with the quotes */
    for (int j = 0; j < kc->used; j++) {
        if (kc->n[j] == n && key_eq(q, s->end - q, kc->text[j], n)) {
            kc->next[prev] = (uint8_t)j;
            return j;
        }
    }
    if (n >= KC_TEXT || kc->used >= KC_SLOTS) return -1;
    int j = kc->used++;
    memcpy(kc->text[j], q, (size_t)n);
    kc->n[j] = (uint8_t)n;
    kc->id[j] = (int8_t)*id;
    kc->next[j] = KC_SLOTS; /* nothing learned yet */
    kc->next[prev] = (uint8_t)j;
    return j;
}

/* Phases of the strict schema's skip structs (everything but X and the instant i/I). */
static int skip_phase(const Span *ph) {
    if (ph->esc) return 0;
    if (ph->n != 1) return 0;
    switch (ph->p[0]) {
    case 'B': case 'E': case 'C': case 'b': case 'n': case 'e': case 'S': case 'T': case 'p':
    case 'F': case 's': case 't': case 'f': case 'P': case 'O': case 'N': case 'D': case 'M':
    case 'V': case 'v': case 'R': case 'c': case '(': case ')':
        return 1;
    }
    return 0;
}

static int grow(Scan *s) {
    Py_ssize_t cap = s->cap ? s->cap * 2 : 1024;
    for (int i = 0; i < NF; i++) { void *q = realloc(s->F[i], sizeof(double) * cap); if (!q) return -1; s->F[i] = q; }
    for (int i = 0; i < NI; i++) { void *q = realloc(s->I[i], sizeof(int64_t) * cap); if (!q) return -1; s->I[i] = q; }
    for (int i = 0; i < NS; i++) { void *q = realloc(s->S[i], sizeof(int32_t) * cap); if (!q) return -1; s->S[i] = q; }
    for (int i = 0; i < NU; i++) { void *q = realloc(s->U[i], cap); if (!q) return -1; s->U[i] = q; }
    void *q = realloc(s->offs, sizeof(int64_t) * (cap + 1));
    if (!q) return -1;
    s->offs = q;
    s->cap = cap;
    return 0;
}

/* Local string id of a V_STR value; -2 on allocation failure. */
static int32_t str_id(Scan *s, const Span *sp) {
    int32_t k = table_id(&s->strs, sp->p, sp->n, sp->esc);
    return k < 0 ? -2 : k;
}

/* The local id of a (pid, tid) thread key (each an int, a string or None); -1 on no memory. */
static int32_t pair_of(Scan *s, const Val *pid, const Val *tid) {
    Pair q;
    q.pk = pid->kind == V_INT ? 1 : pid->kind == V_STR ? 2 : 0;
    q.tk = tid->kind == V_INT ? 1 : tid->kind == V_STR ? 2 : 0;
    q.pv = q.tv = 0;
    if (q.pk == 1) q.pv = pid->i;
    else if (q.pk == 2 && (q.pv = str_id(s, &pid->str)) == -2) return -1;
    if (q.tk == 1) q.tv = tid->i;
    else if (q.tk == 2 && (q.tv = str_id(s, &tid->str)) == -2) return -1;
    return pair_id(&s->pairs, &q);
}

/* The Python rule for an untyped id field of a GPU event (strict._untyped_id): an int stays, a
   missing value or null is the default; anything else is ODD. */
static int64_t gpu_int(const Val *v, int64_t dflt, int64_t lo, int64_t hi, int *odd) {
    if (v->kind == V_MISSING || v->kind == V_NULL) return dflt;
    if (v->kind == V_INT && v->i >= lo && v->i <= hi) return v->i;
    *odd = 1;
    return dflt;
}

static double gpu_float(const Val *v, int *odd) {
    if (v->kind == V_MISSING || v->kind == V_NULL) return NAN;
    if (v->kind == V_INT || v->kind == V_FLOAT) return v->d;
    *odd = 1;
    return NAN;
}

/* The collective record of event i (it has a Collective name): its counts (a JSON integer >= 0,
   codes.count_or_none; anything else NONE) and strings. -1: no memory. */
static int comm_record(Scan *s, Py_ssize_t i, const Val *a) {
    static const int counts[NCI] = {A_IN, A_OUT, A_GSIZE, A_CSEQ, A_RSTART, A_RSTRIDE};
    static const int texts[NCS] = {A_DTYPE, A_PG_NAME, A_PG_DESC, A_PG_RANKS};
    if (s->nc == s->ccap) {
        Py_ssize_t cap = s->ccap ? s->ccap * 2 : 64;
        void *e = realloc(s->cev, sizeof(int64_t) * cap);
        if (!e) return -1;
        s->cev = e;
        void *c = realloc(s->ci, sizeof(int64_t) * NCI * cap);
        if (!c) return -1;
        s->ci = c;
        void *t = realloc(s->cs, sizeof(int32_t) * NCS * cap);
        if (!t) return -1;
        s->cs = t;
        s->ccap = cap;
    }
    Py_ssize_t k = s->nc;
    s->cev[k] = i;
    for (int j = 0; j < NCI; j++) {
        const Val *v = &a[counts[j]];
        s->ci[k * NCI + j] = v->kind == V_INT && v->i >= 0 ? v->i : NONE_ID;
    }
    for (int j = 0; j < NCS; j++) {
        const Val *v = &a[texts[j]];
        int32_t id = NONE_ID;
        if (v->kind == V_STR && (id = str_id(s, &v->str)) == -2) return -1;
        s->cs[k * NCS + j] = id;
    }
    s->nc++;
    return 0;
}

static int refuse(Scan *s, const char *start);

/* An id of a [memory] record (lenient.py's ID rule: an int, else the default for a missing value or
   null; anything else, or an int beyond the column, is left to the Python builder). */
static int mem_int(const Val *v, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
    if (v->kind == V_MISSING || v->kind == V_NULL) { *out = dflt; return 0; }
    if (v->kind == V_INT && v->i >= lo && v->i <= hi) { *out = v->i; return 0; }
    return -1;
}

static int32_t pair_of(Scan *s, const Val *pid, const Val *tid);

/* A [memory] instant event with an args object: the memory table's row. */
static int memory_record(Scan *s, const char *start, const Val *pid, const Val *tid, const Val *ts, const Val *a) {
    Py_ssize_t i = s->n;
    if (ts->kind != V_INT && ts->kind != V_FLOAT) return refuse(s, start);
    for (int j = 0; j < NI; j++) s->I[j][i] = NONE_ID;
    if (mem_int(&a[A_MEM_BYTES], 0, INT64_MIN, INT64_MAX, &s->I[I_MEM_BYTES][i]) < 0 ||
        mem_int(&a[A_TOTAL_ALLOC], NONE_ID, INT64_MIN, INT64_MAX, &s->I[I_TOTAL_ALLOC][i]) < 0 ||
        mem_int(&a[A_TOTAL_RES], NONE_ID, INT64_MIN, INT64_MAX, &s->I[I_TOTAL_RES][i]) < 0 ||
        mem_int(&a[A_DEV_TYPE], NONE_ID, INT16_MIN, INT16_MAX, &s->I[I_DEV_TYPE][i]) < 0 ||
        mem_int(&a[A_DEV_ID], NONE_ID, INT16_MIN, INT16_MAX, &s->I[I_DEV_ID][i]) < 0)
        return refuse(s, start);
    int okp = pid->kind == V_INT || pid->kind == V_STR || pid->kind == V_NULL || pid->kind == V_MISSING;
    int okt = tid->kind == V_INT || tid->kind == V_STR || tid->kind == V_NULL || tid->kind == V_MISSING;
    if (!okp || !okt) return refuse(s, start); /* the Python builder keys odd ones by their text */
    for (int j = 0; j < NF; j++) s->F[j][i] = NAN;
    for (int j = 0; j < NS; j++) s->S[j][i] = NONE_ID;
    s->F[F_TS][i] = ts->d;
    int32_t id = pair_of(s, pid, tid);
    if (id < 0) { s->bad = NOMEM; return -1; }
    s->S[S_PAIR][i] = id;
    s->U[U_PH][i] = PH_MEMORY;
    s->U[U_ODD][i] = 0;
    s->n++;
    return 0;
}

/* An event the columns cannot take, though it may be valid JSON: skipped whole when it is
   (s->bad = REFUSED, s->p after it: the caller hands just this event to msgspec). */
static int refuse(Scan *s, const char *start) {
    s->p = start;
    s->bad = 0;
    if (skip_value(s, 0) < 0) return -1;
    s->bad = REFUSED;
    return -1;
}

/* An object's next key (via the key cache) and its colon: 0 with *id set (`none` for a key not
   read), else -1 as event() returns it. A repeated key read is refused: msgspec keeps the last. */
static int member(Scan *s, KeyCache *kc, int *prev, int (*lookup)(const char *, Py_ssize_t), int none,
                  uint64_t *seen, int *id, const char *start) {
    int slot = next_key(s, kc, *prev, lookup, id);
    if (slot == -2) return -1;
    if (slot == -3) return refuse(s, start);
    *prev = slot >= 0 ? slot : KC_START;
    ws(s);
    if (s->p >= s->end || *s->p != ':') { s->bad = 1; return -1; }
    s->p++;
    ws(s);
    if (*id != none) {
        if (*seen & (1ull << *id)) return refuse(s, start);
        *seen |= 1ull << *id;
    }
    return 0;
}

/* One event object at s->p. Returns 0 (added), -1 (s->bad: INVALID, REFUSED or NOMEM). */
static int event(Scan *s) {
    const char *start = s->p;
    if (s->p >= s->end || *s->p != '{') { s->bad = 1; return -1; }
    if (s->n == s->cap && grow(s) < 0) { s->bad = NOMEM; return -1; }
    s->p++;
    uint64_t seen = 0, aseen = 0;
    int xbad = 0; /* refused by the X struct only (other phases do not read these fields) */
    int args_kind = V_MISSING;
    Span ph = {0}, cat = {0}, name = {0};
    int has_ph = 0, name_str = 0;
    Val pid = {V_MISSING}, tid = {V_MISSING}, ts = {V_MISSING}, dur = {V_MISSING};
    Val a[A_NONE];
    for (int i = 0; i < A_NONE; i++) a[i].kind = V_MISSING;
    int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
    Span dims = {0}, types = {0}, conc = {0}; /* raw JSON values */
    int has_dims = 0, has_types = 0, has_conc = 0;

    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        int prev = KC_START;
        for (;;) {
            int key;
            if (member(s, &s->top, &prev, event_key, E_NONE, &seen, &key, start) < 0) return -1;
            switch (key) {
            case E_PH: {
                Val v;
                if (value(s, &v) < 0) return -1;
                if (v.kind != V_STR) return refuse(s, start);
                ph = v.str;
                has_ph = 1;
                break;
            }
            case E_CAT: case E_NAME: {
                Val v;
                if (value(s, &v) < 0) return -1;
                if (v.kind != V_STR) xbad = 1;
                else if (key == E_CAT) cat = v.str;
                else { name = v.str; name_str = 1; }
                break;
            }
            case E_PID: case E_TID: {
                Val *v = key == E_PID ? &pid : &tid;
                if (value(s, v) < 0) return -1;
                if (v->kind != V_INT && v->kind != V_STR && v->kind != V_NULL) xbad = 1;
                break;
            }
            case E_TS: case E_DUR: {
                Val *v = key == E_TS ? &ts : &dur;
                if (value(s, v) < 0) return -1;
                if (v->kind != V_INT && v->kind != V_FLOAT) xbad = 1;
                break;
            }
            case E_CODE: /* the strict schema's own class key: msgspec decides */
                return refuse(s, start);
            case E_ARGS: {
                if (s->p >= s->end) { s->bad = 1; return -1; }
                if (*s->p == 'n') {
                    if (literal(s, "null", 4) < 0) return -1;
                    args_kind = V_NULL;
                    break;
                }
                if (*s->p != '{') {
                    args_kind = V_OTHER;
                    if (skip_value(s, 1) < 0) return -1;
                    break;
                }
                args_kind = V_STR; /* an object */
                s->p++;
                ws(s);
                if (s->p < s->end && *s->p == '}') { s->p++; break; }
                int aprev = KC_START;
                for (;;) {
                    int id;
                    if (member(s, &s->args, &aprev, arg_key, A_NONE, &aseen, &id, start) < 0) return -1;
                    if (id == A_NONE) {
                        if (skip_value(s, 1) < 0) return -1;
                    } else if (id == A_DIMS || id == A_TYPES || id == A_CONC) {
                        const char *v0 = s->p;
                        if (skip_value(s, 1) < 0) return -1;
                        Span *r = id == A_DIMS ? &dims : id == A_TYPES ? &types : &conc;
                        r->p = v0;
                        r->n = s->p - v0;
                        r->esc = 0;
                        if (id == A_DIMS) has_dims = 1; else if (id == A_TYPES) has_types = 1; else has_conc = 1;
                    } else if (id == A_GRID || id == A_BLOCK) {
                        int ok;
                        if (dim3(s, id == A_GRID ? grid : block, &ok) < 0) return -1;
                        if (!ok) xbad = 1;
                        a[id].kind = V_INT;
                    } else {
                        if (value(s, &a[id]) < 0) return -1;
                    }
                    ws(s);
                    if (s->p >= s->end) { s->bad = 1; return -1; }
                    if (*s->p == ',') { s->p++; ws(s); continue; }
                    if (*s->p == '}') { s->p++; break; }
                    s->bad = 1;
                    return -1;
                }
                break;
            }
            default:
                if (skip_value(s, 1) < 0) return -1;
            }
            ws(s);
            if (s->p >= s->end) { s->bad = 1; return -1; }
            if (*s->p == ',') { s->p++; ws(s); continue; }
            if (*s->p == '}') { s->p++; break; }
            s->bad = 1;
            return -1;
        }
    }
    if (!has_ph) return refuse(s, start); /* the strict union needs its tag */
    Py_ssize_t i = s->n;
    int is_x = !ph.esc && ph.n == 1 && ph.p[0] == 'X';
    if (!is_x) {
        int instant = !ph.esc && ph.n == 1 && (ph.p[0] == 'i' || ph.p[0] == 'I');
        if (!instant && !skip_phase(&ph)) return refuse(s, start); /* an unknown phase */
        if (args_kind == V_OTHER) return refuse(s, start);
        if (instant && name_str && args_kind == V_STR && name.n == 8 && memcmp(name.p, "[memory]", 8) == 0)
            return memory_record(s, start, &pid, &tid, &ts, a);
        /* other phases and instants: counted, nothing read (as the strict builder does) */
        s->U[U_PH][i] = PH_SKIP;
        s->U[U_ODD][i] = 0;
        for (int j = 0; j < NF; j++) s->F[j][i] = NAN;
        for (int j = 0; j < NI; j++) s->I[j][i] = NONE_ID;
        for (int j = 0; j < NS; j++) s->S[j][i] = NONE_ID;
        s->n++;
        return 0;
    }
    /* The typed fields of XArgs: refused values are left to msgspec (it words the error). */
    if (args_kind == V_NULL || args_kind == V_OTHER) xbad = 1;
    if (a[A_EXT].kind != V_MISSING && a[A_EXT].kind != V_NULL && a[A_EXT].kind != V_INT) xbad = 1;
    const int typed[] = {A_FWD, A_SEQ, A_CORR, A_EXT_LC};
    for (int j = 0; j < 4; j++) {
        int k = a[typed[j]].kind;
        if (k != V_MISSING && k != V_INT) xbad = 1;
    }
    if (a[A_STACK].kind != V_MISSING && a[A_STACK].kind != V_NULL && a[A_STACK].kind != V_STR) xbad = 1;
    if (xbad) return refuse(s, start);

    int odd = 0;
    s->U[U_PH][i] = PH_X;
    s->F[F_TS][i] = ts.kind == V_MISSING ? NAN : ts.d;
    s->F[F_DUR][i] = dur.kind == V_MISSING ? NAN : dur.d;
    s->F[F_BPS][i] = gpu_float(&a[A_BPS], &odd);
    s->F[F_WPS][i] = gpu_float(&a[A_WPS], &odd);
    s->F[F_OCC][i] = gpu_float(&a[A_OCC], &odd);
    int64_t ext_lc = a[A_EXT_LC].kind == V_INT ? a[A_EXT_LC].i : NONE_ID;
    s->I[I_EXT][i] = a[A_EXT].kind == V_INT ? a[A_EXT].i : ext_lc;
    s->I[I_SEQ][i] = a[A_SEQ].kind == V_INT ? a[A_SEQ].i : NONE_ID;
    s->I[I_FWD][i] = a[A_FWD].kind == V_INT ? a[A_FWD].i : NONE_ID;
    s->I[I_CORR][i] = a[A_CORR].kind == V_INT ? a[A_CORR].i : NONE_ID;
    /* the device defaults to the pid (the DEVICE rule: int_or(pid, 0)); a missing stream is
       none (codes.stream_of), whatever the tid */
    if (a[A_DEV].kind == V_MISSING || a[A_DEV].kind == V_NULL) {
        int64_t d = pid.kind == V_INT ? pid.i : 0;
        if (pid.kind == V_STR || d < INT32_MIN || d > INT32_MAX) odd = 1;
        s->I[I_DEV][i] = d;
    } else {
        s->I[I_DEV][i] = gpu_int(&a[A_DEV], 0, INT32_MIN, INT32_MAX, &odd);
    }
    s->I[I_STREAM][i] = gpu_int(&a[A_STREAM], NONE_ID, INT64_MIN, INT64_MAX, &odd);
    s->I[I_REGS][i] = gpu_int(&a[A_REGS], NONE_ID, INT32_MIN, INT32_MAX, &odd);
    s->I[I_SHMEM][i] = gpu_int(&a[A_SHMEM], NONE_ID, INT64_MIN, INT64_MAX, &odd);
    s->I[I_NBYTES][i] = gpu_int(&a[A_NBYTES], NONE_ID, INT64_MIN, INT64_MAX, &odd);
    s->I[I_WAIT_STREAM][i] = gpu_int(&a[A_WAIT_STREAM], NONE_ID, INT64_MIN, INT64_MAX, &odd);
    s->I[I_WAIT_CORR][i] = gpu_int(&a[A_WAIT_CORR], NONE_ID, INT64_MIN, INT64_MAX, &odd);
    for (int j = 0; j < 3; j++) {
        s->I[I_G0 + j][i] = grid[j];
        s->I[I_B0 + j][i] = block[j];
    }
    s->U[U_ODD][i] = (uint8_t)odd;

    int32_t id;
    if (seen & (1ull << E_CAT)) {
        if ((id = str_id(s, &cat)) == -2) { s->bad = NOMEM; return -1; }
    } else {
        Span e = {EMPTY_TEXT, 0, 0, 0};
        if ((id = str_id(s, &e)) == -2) { s->bad = NOMEM; return -1; }
    }
    s->S[S_CAT][i] = id;
    if (seen & (1ull << E_NAME)) {
        if ((id = str_id(s, &name)) == -2) { s->bad = NOMEM; return -1; }
    } else {
        Span e = {NONE_TEXT, 4, 0, 0}; /* the lenient builder names a nameless event str(None) */
        if ((id = str_id(s, &e)) == -2) { s->bad = NOMEM; return -1; }
    }
    s->S[S_NAME][i] = id;
    if ((id = pair_of(s, &pid, &tid)) < 0) { s->bad = NOMEM; return -1; }
    s->S[S_PAIR][i] = id;
    s->S[S_DIMS][i] = NONE_ID;
    s->S[S_TYPES][i] = NONE_ID;
    if (has_dims && dims.n > 0 && (s->S[S_DIMS][i] = table_id(&s->raws, dims.p, dims.n, 0)) < 0) { s->bad = NOMEM; return -1; }
    if (has_types && types.n > 0 && (s->S[S_TYPES][i] = table_id(&s->raws, types.p, types.n, 0)) < 0) { s->bad = NOMEM; return -1; }
    s->S[S_CONC][i] = NONE_ID;
    if (has_conc && conc.n > 0 && (s->S[S_CONC][i] = table_id(&s->raws, conc.p, conc.n, 0)) < 0) { s->bad = NOMEM; return -1; }
    s->S[S_STACK][i] = NONE_ID;
    if (a[A_STACK].kind == V_STR && a[A_STACK].str.n > 0) { /* "" is no stack */
        if ((id = str_id(s, &a[A_STACK].str)) == -2) { s->bad = NOMEM; return -1; }
        s->S[S_STACK][i] = id;
    }
    s->S[S_COLL][i] = NONE_ID;
    if (a[A_COLL].kind == V_STR) {
        if ((id = str_id(s, &a[A_COLL].str)) == -2) { s->bad = NOMEM; return -1; }
        s->S[S_COLL][i] = id;
        if (comm_record(s, i, a) < 0) { s->bad = NOMEM; return -1; }
    }
    s->n++;
    return 0;
}

/* ------------------------------------------------------------------ Python objects */

/* The str of a span; escapes decoded. NULL with an exception set on failure. */
static PyObject *span_str(const Span *sp) {
    if (!sp->esc) return PyUnicode_DecodeUTF8(sp->p, sp->n, "strict");
    char *buf = (char *)PyMem_Malloc((size_t)sp->n + 1);
    if (!buf) return PyErr_NoMemory();
    const char *p = sp->p, *e = sp->p + sp->n;
    char *o = buf;
    while (p < e) {
        if (*p != '\\') { *o++ = *p++; continue; }
        char c = p[1];
        p += 2;
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        default: { /* 'u': four hex digits, not a surrogate (checked by string()) */
            unsigned v = 0;
            for (int i = 0; i < 4; i++) v = v * 16 + (unsigned)hexval(p[i]);
            p += 4;
            if (v < 0x80) {
                *o++ = (char)v;
            } else if (v < 0x800) {
                *o++ = (char)(0xc0 | (v >> 6));
                *o++ = (char)(0x80 | (v & 0x3f));
            } else {
                *o++ = (char)(0xe0 | (v >> 12));
                *o++ = (char)(0x80 | ((v >> 6) & 0x3f));
                *o++ = (char)(0x80 | (v & 0x3f));
            }
        }
        }
    }
    PyObject *r = PyUnicode_DecodeUTF8(buf, o - buf, "strict");
    PyMem_Free(buf);
    return r;
}

static PyObject *column_bytes(void **cols, int k, Py_ssize_t n, size_t item) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * n * item));
    if (!b) return NULL;
    char *o = PyBytes_AS_STRING(b);
    for (int j = 0; j < k; j++) memcpy(o + (size_t)j * n * item, cols[j], (size_t)n * item);
    return b;
}

/* The buffers of the last scans, kept for the next: a slice's columns are megabytes, and fresh
   memory each time costs more in page faults than the parse (the GIL is held while they move). */
#define N_SPARES 8 /* one per thread scanning at once (the reader's threads); more allocate */
static Scan spares[N_SPARES];
static int spare_busy[N_SPARES];

static void keycache_init(KeyCache *kc) {
    if (kc->used == 0) memset(kc->next, KC_SLOTS, sizeof(kc->next));
}

static void take_spare(Scan *s) {
    int k = 0;
    while (k < N_SPARES && spare_busy[k]) k++;
    if (k == N_SPARES) return;
    spare_busy[k] = 1;
    Scan *spare = &spares[k];
    memcpy(s->F, spare->F, sizeof(s->F));
    memcpy(s->I, spare->I, sizeof(s->I));
    memcpy(s->S, spare->S, sizeof(s->S));
    memcpy(s->U, spare->U, sizeof(s->U));
    s->offs = spare->offs;
    s->cap = spare->cap;
    s->strs = spare->strs;
    s->raws = spare->raws;
    s->pairs = spare->pairs;
    s->top = spare->top;
    s->args = spare->args;
    s->strs.len = s->raws.len = s->pairs.len = 0;
    if (s->strs.slots) memset(s->strs.slots, 0xff, sizeof(int32_t) * s->strs.nslots);
    if (s->raws.slots) memset(s->raws.slots, 0xff, sizeof(int32_t) * s->raws.nslots);
    if (s->pairs.slots) memset(s->pairs.slots, 0xff, sizeof(int32_t) * s->pairs.nslots);
    s->own = k + 1;
}

static void scan_free(Scan *s) {
    free(s->cev); free(s->ci); free(s->cs); /* never kept with the spares: small, and only in distributed traces */
    s->cev = s->ci = NULL;
    s->cs = NULL;
    s->nc = s->ccap = 0;
    if (s->own) {
        spares[s->own - 1] = *s;
        spare_busy[s->own - 1] = 0;
        return;
    }
    for (int i = 0; i < NF; i++) free(s->F[i]);
    for (int i = 0; i < NI; i++) free(s->I[i]);
    for (int i = 0; i < NS; i++) free(s->S[i]);
    for (int i = 0; i < NU; i++) free(s->U[i]);
    free(s->offs);
    free(s->strs.items); free(s->strs.slots);
    free(s->raws.items); free(s->raws.slots);
    free(s->pairs.items); free(s->pairs.slots);
}

static PyObject *pair_part(PyObject *strs, int8_t k, int64_t v) {
    if (k == 1) return PyLong_FromLongLong(v);
    if (k == 2) { PyObject *o = PyList_GET_ITEM(strs, v); Py_INCREF(o); return o; }
    Py_RETURN_NONE;
}

static PyObject *build_result(Scan *s, Py_ssize_t next) {
    Py_ssize_t n = s->n;
    PyObject *strs = NULL, *raws = NULL, *pairs = NULL, *fb = NULL, *ib = NULL, *sb = NULL, *ub = NULL, *ob = NULL;
    PyObject *ceb = NULL, *cib = NULL, *csb = NULL;
    strs = PyList_New(s->strs.len);
    if (!strs) goto fail;
    for (Py_ssize_t i = 0; i < s->strs.len; i++) {
        PyObject *o = span_str(&s->strs.items[i]);
        if (!o) goto fail;
        PyList_SET_ITEM(strs, i, o);
    }
    raws = PyList_New(s->raws.len);
    if (!raws) goto fail;
    for (Py_ssize_t i = 0; i < s->raws.len; i++) {
        PyObject *o = PyBytes_FromStringAndSize(s->raws.items[i].p, s->raws.items[i].n);
        if (!o) goto fail;
        PyList_SET_ITEM(raws, i, o);
    }
    pairs = PyList_New(s->pairs.len);
    if (!pairs) goto fail;
    for (Py_ssize_t i = 0; i < s->pairs.len; i++) {
        Pair *q = &s->pairs.items[i];
        PyObject *a = pair_part(strs, q->pk, q->pv);
        PyObject *b = a ? pair_part(strs, q->tk, q->tv) : NULL;
        PyObject *t = b ? PyTuple_Pack(2, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (!t) goto fail;
        PyList_SET_ITEM(pairs, i, t);
    }
    fb = column_bytes((void **)s->F, NF, n, sizeof(double));
    ib = fb ? column_bytes((void **)s->I, NI, n, sizeof(int64_t)) : NULL;
    sb = ib ? column_bytes((void **)s->S, NS, n, sizeof(int32_t)) : NULL;
    ub = sb ? column_bytes((void **)s->U, NU, n, 1) : NULL;
    ob = ub ? PyBytes_FromStringAndSize((const char *)s->offs, (Py_ssize_t)sizeof(int64_t) * (n + 1)) : NULL;
    Py_ssize_t nc = s->nc;
    ceb = ob ? PyBytes_FromStringAndSize((const char *)s->cev, (Py_ssize_t)sizeof(int64_t) * nc) : NULL;
    cib = ceb ? PyBytes_FromStringAndSize((const char *)s->ci, (Py_ssize_t)sizeof(int64_t) * NCI * nc) : NULL;
    csb = cib ? PyBytes_FromStringAndSize((const char *)s->cs, (Py_ssize_t)sizeof(int32_t) * NCS * nc) : NULL;
    if (!csb) goto fail;
    return Py_BuildValue("(nNNNNNNNNNNNn)", n, fb, ib, sb, ub, ob, strs, raws, pairs, ceb, cib, csb, next);
fail:
    Py_XDECREF(strs); Py_XDECREF(raws); Py_XDECREF(pairs);
    Py_XDECREF(fb); Py_XDECREF(ib); Py_XDECREF(sb); Py_XDECREF(ub); Py_XDECREF(ob);
    Py_XDECREF(ceb); Py_XDECREF(cib); Py_XDECREF(csb);
    return NULL;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &lo, &hi)) return NULL;
    if (lo < 0 || hi > view.len || lo > hi) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    Scan s;
    memset(&s, 0, sizeof(s));
    const char *base = (const char *)view.buf;
    s.p = base + lo;
    s.end = base + hi;
    take_spare(&s);
    keycache_init(&s.top);
    keycache_init(&s.args);
    Py_ssize_t next = -1; /* after a refused event: where the next one begins (hi: none) */
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    if (s.cap == 0 && grow(&s) < 0) {
        nomem = 1;
    } else {
        ws(&s);
        while (s.p < s.end) {
            s.offs[s.n] = s.p - base;
            if (event(&s) < 0) {
                if (s.bad == NOMEM) {
                    nomem = 1;
                } else if (s.bad == REFUSED) {
                    ws(&s);
                    if (s.p >= s.end) {
                        next = hi;
                    } else if (*s.p == ',') {
                        s.p++;
                        ws(&s);
                        next = s.p < s.end ? s.p - base : -1; /* a trailing comma is invalid */
                    }
                }
                s.p = base + s.offs[s.n];
                break;
            }
            ws(&s);
            if (s.p >= s.end) break;
            if (*s.p != ',') break; /* invalid: msgspec gets the rest and says so */
            s.p++;
            ws(&s);
            if (s.p >= s.end) { s.p--; break; }  /* a trailing comma: invalid, as above */
        }
        if (!nomem) s.offs[s.n] = s.p - base;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (nomem) {
        PyErr_NoMemory();
    } else {
        result = build_result(&s, s.p >= s.end ? hi : next);
        if (!result && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { /* left to msgspec */
            PyErr_Clear();
            result = Py_None;
            Py_INCREF(result);
        }
    }
    scan_free(&s);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, lo, hi) -> (n, f64, i64, i32, u8, offsets, strings, raws, pairs, comm_events, comm_i64, "
     "comm_i32, next): the first n events of buf[lo:hi] as columns; offsets[n] is where the scan "
     "stopped (hi: the end), at an event it refused; the events with a Collective name and their "
     "collective records (COMM_ROWS); next is where the event after the refused one begins (hi: "
     "none), -1 when the rest must go to msgspec whole (invalid JSON there, or UTF-8, or an escape)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kscan", NULL, -1, methods, NULL, NULL, NULL, NULL};

static const char *const f64_names[] = {F64_ROWS(AS_NAME)};
static const char *const i64_names[] = {I64_ROWS(AS_NAME)};
static const char *const i32_names[] = {I32_ROWS(AS_NAME)};
static const char *const u8_names[] = {U8_ROWS(AS_NAME)};
static const char *const ci_names[] = {COMM_I64(AS_NAME)};
static const char *const cs_names[] = {COMM_I32(AS_NAME)};

/* A tuple of the `n` names; NULL with an exception set on failure. */
static PyObject *names_tuple(const char *const *names, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *o = PyUnicode_FromString(names[i]);
        if (!o) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

PyMODINIT_FUNC PyInit__kscan(void) {
    for (int i = 0; i < A_NONE; i++) {
        if (arg_key(arg_names[i], (Py_ssize_t)strlen(arg_names[i])) != i) {
            PyErr_Format(PyExc_ImportError, "_kscan: arg_key() does not find \"%s\"", arg_names[i]);
            return NULL;
        }
    }
    const char *const *names[4] = {f64_names, i64_names, i32_names, u8_names};
    const int counts[4] = {NF, NI, NS, NU};
    PyObject *m = PyModule_Create(&module);
    PyObject *rows = m ? PyTuple_New(4) : NULL;
    PyObject *keys = NULL, *ci = NULL, *cs = NULL, *comm = NULL;
    if (!rows) goto fail;
    for (int i = 0; i < 4; i++) {
        PyObject *t = names_tuple(names[i], counts[i]);
        if (!t) goto fail;
        PyTuple_SET_ITEM(rows, i, t);
    }
    keys = names_tuple(arg_names, A_NONE);
    ci = keys ? names_tuple(ci_names, NCI) : NULL;
    cs = ci ? names_tuple(cs_names, NCS) : NULL;
    comm = cs ? PyTuple_Pack(2, ci, cs) : NULL;
    /* ROWS: the rows scan() fills per type (f64, i64, i32, u8); ARG_KEYS: the args keys it reads;
       COMM_ROWS: the values of a collective record (i64, i32) */
    if (!comm || PyModule_AddObjectRef(m, "ROWS", rows) < 0 || PyModule_AddObjectRef(m, "ARG_KEYS", keys) < 0 ||
        PyModule_AddObjectRef(m, "COMM_ROWS", comm) < 0)
        goto fail;
    Py_DECREF(rows);
    Py_DECREF(keys);
    Py_DECREF(ci);
    Py_DECREF(cs);
    Py_DECREF(comm);
    return m;
fail:
    Py_XDECREF(rows);
    Py_XDECREF(keys);
    Py_XDECREF(ci);
    Py_XDECREF(cs);
    Py_XDECREF(comm);
    Py_XDECREF(m);
    return NULL;
}

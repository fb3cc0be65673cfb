/*
 * The simhash kernel's features computed the simplest way C allows, for bench/c_loop.py:
 * the same tokens, shingles, CJK n-grams, XXH3 hashes, counts and checksum as
 * fingerprint_text in dedup/_simhash.pyx, from a normalised text already encoded as
 * UTF-8. No Python object is touched: what is left of the kernel's time over this loop's
 * is what reading a str from Python costs.
 *
 * Spared, as the comparison allows: the text is whole in memory (one buffer of its
 * tokens, not the kernel's window kept in 64 KiB), and every code point's class is read
 * from one table (bench/c_loop.py's class_table: 1,114,112 bytes), where the kernel asks
 * Python past U+FFFF. bench/c_loop.py counts the texts where both agree.
 *
 *   int simhash_loop(text, length, class_table, shingle, cjk_ngram, drop_numbers, lanes,
 *                    out)  ->  0, out = {simhash, checksum low 64, high 64, tokens,
 *                                        features}; -1 when out of memory
 *
 * lanes = 0 counts each feature's 64 bits one by one; lanes = 1 counts them in byte lanes
 * (eight bits of eight positions in one 64-bit add), as the kernel does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

enum { SEP = 0, WORD = 1, CJK = 2, MARK = 3, DIGIT = 4, MAX_WINDOW = 8 };

#define LANE_MASK 0x0101010101010101ULL

typedef struct {
    int lanes;              /* count in byte lanes (1) or bit by bit (0) */
    uint64_t lane[8];       /* byte lanes: bit b of each byte of lane[j] is bit 8*byte+j */
    uint32_t pending;       /* features in the lanes since they were last emptied */
    uint32_t counts[64];
    uint64_t features;
} Counts;

static void empty_lanes(Counts *acc) {
    for (int j = 0; j < 8; j++) {
        for (int byte = 0; byte < 8; byte++)
            acc->counts[byte * 8 + j] += (uint32_t)((acc->lane[j] >> (8 * byte)) & 0xFF);
        acc->lane[j] = 0;
    }
    acc->pending = 0;
}

static void count(Counts *acc, uint64_t h) {
    acc->features++;
    if (!acc->lanes) {
        for (int b = 0; b < 64; b++)
            acc->counts[b] += (uint32_t)((h >> b) & 1);
        return;
    }
    for (int j = 0; j < 8; j++)
        acc->lane[j] += (h >> j) & LANE_MASK;
    if (++acc->pending == 255)  /* a byte holds 255 at most */
        empty_lanes(acc);
}

/* The code point at s[i] and its length in bytes (the text is valid UTF-8). */
static size_t next_char(const uint8_t *s, size_t i, size_t n, uint32_t *c) {
    uint8_t b = s[i];
    if (b < 0x80) {
        *c = b;
        return 1;
    }
    if ((b & 0xE0) == 0xC0 && i + 1 < n) {
        *c = ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3Fu);
        return 2;
    }
    if ((b & 0xF0) == 0xE0 && i + 2 < n) {
        *c = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6)
             | (s[i + 2] & 0x3Fu);
        return 3;
    }
    if (i + 3 < n) {
        *c = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12)
             | ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3Fu);
        return 4;
    }
    *c = 0xFFFD;
    return 1;
}

static int classify(uint32_t c, const uint8_t *table) {
    return c < 0x110000 ? table[c] : SEP;
}

int simhash_loop(const char *text, size_t n, const uint8_t *table, int shingle,
                 int cjk_ngram, int drop_numbers, int lanes, uint64_t *out) {
    const uint8_t *s = (const uint8_t *)text;
    uint8_t *buf = malloc(2 * n + 16);  /* every token and a space after it */
    if (buf == NULL)
        return -1;
    Counts acc;
    memset(&acc, 0, sizeof acc);
    acc.lanes = lanes;
    int ring = shingle > cjk_ngram ? shingle : cjk_ngram;  /* the widest window */
    size_t starts[MAX_WINDOW];  /* where the last `ring` tokens start in buf */
    size_t pos = 0, tok_start = 0, i = 0;
    uint64_t ntokens = 0;
    int in_word = 0, all_digits = 1;
    for (;;) {
        uint32_t c = 0;
        size_t len = 0;
        int cls = SEP;  /* the end of the text closes the last word */
        if (i < n) {
            len = next_char(s, i, n, &c);
            cls = classify(c, table);
            i += len;
        }
        if (cls == MARK)
            continue;
        if (cls == WORD || cls == DIGIT) {
            if (!in_word) {
                in_word = 1;
                all_digits = 1;
                tok_start = pos;
            }
            if (cls == WORD)
                all_digits = 0;
            memcpy(buf + pos, s + i - len, len);
            pos += len;
            continue;
        }
        /* a separator or a CJK character ends the word; a CJK character is a token */
        for (int k = 0; k < 2; k++) {
            if (k == 0 && in_word) {
                in_word = 0;
                if (drop_numbers && all_digits) {
                    pos = tok_start;
                    continue;
                }
            } else if (k == 1 && cls == CJK) {
                tok_start = pos;
                memcpy(buf + pos, s + i - len, len);
                pos += len;
            } else {
                continue;
            }
            buf[pos++] = ' ';
            starts[ntokens % ring] = tok_start;
            ntokens++;
            int width = k == 1 ? cjk_ngram : shingle;
            if (ntokens >= (uint64_t)width) {
                size_t from = starts[(ntokens - width) % ring];
                count(&acc, XXH3_64bits(buf + from, pos - 1 - from));
            }
        }
        if (len == 0)
            break;
    }
    if (ntokens > 0 && acc.features == 0)  /* too few tokens: the whole stream is one */
        count(&acc, XXH3_64bits(buf + starts[0], pos - 1 - starts[0]));
    empty_lanes(&acc);
    uint64_t simhash = 0;
    for (int b = 0; b < 64; b++)
        if (2 * (uint64_t)acc.counts[b] > acc.features)
            simhash |= (uint64_t)1 << b;
    XXH128_hash_t digest = XXH3_128bits(buf, pos);  /* the kernel's stream of tokens */
    free(buf);
    out[0] = simhash;
    out[1] = digest.low64;
    out[2] = digest.high64;
    out[3] = ntokens;
    out[4] = acc.features;
    return 0;
}

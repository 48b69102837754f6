#ifndef CCURL_MEMORY_H
#define CCURL_MEMORY_H
#include <stddef.h>
#include <stdint.h>

/// A pool of fixed-size, page-aligned blocks for libcurl's upload buffers.
///
/// libcurl 7.88 gives every easy handle that sends a request through its upload buffer (every HTTP/2 POST, every
/// HTTP/1.1 request over TLS) a buffer of CURLOPT_UPLOAD_BUFFERSIZE bytes (16 KiB at the least), of which a small
/// request writes a few hundred bytes; it is freed when a transfer ends on a connection nothing else uses, and kept by
/// the handle (idle or reused) on a shared HTTP/2 connection until the handle is cleaned up. From glibc's heap those
/// buffers sit end to end, so each one's header and first bytes land on one or two pages. From the pool each buffer
/// starts on its own page and nothing else is written to it: a request of up to one page costs one resident page, and a
/// slot once touched is reused (last returned, first handed out) rather than another being touched. Slots left unused
/// after a burst give their pages back when ccurl_slot_pool_release_idle is called.
///
/// The pool reserves address space without memory (PROT_NONE, which even strict overcommit does not charge; a
/// usable chunk is charged in full there) and makes it usable a chunk at a time as slots are first needed, without
/// transparent huge pages. When it is full, or a chunk cannot be made usable, the caller falls back to malloc.
typedef struct ccurl_slot_pool ccurl_slot_pool;

typedef struct {
    size_t slot_bytes;        ///< Size of every slot (a multiple of the page size).
    size_t capacity;          ///< Slots the reserved address space holds.
    size_t usable;            ///< Slots made readable and writable so far.
    size_t in_use;            ///< Slots handed out and not yet returned.
    size_t high_water;        ///< Most slots handed out at once.
    uint64_t fallbacks;       ///< Requests the pool could not serve (full, or a chunk could not be committed).
    size_t returned;          ///< Slots given back and not handed out again.
    uint64_t released;        ///< Slots whose pages were given back to the system (ccurl_slot_pool_release_idle).
    uint64_t discarded;       ///< Slots handed out whose pages their holder gave back (ccurl_slot_pool_discard_later).
} ccurl_slot_pool_stats;

/// Creates a pool of `slot_count` slots of `slot_bytes` each (rounded up to whole pages), made usable
/// `chunk_slots` at a time. NULL when the address space cannot be reserved.
ccurl_slot_pool *ccurl_slot_pool_create(size_t slot_bytes, size_t slot_count, size_t chunk_slots);
/// Unmaps the pool. Every slot must have been returned (it aborts otherwise).
void ccurl_slot_pool_destroy(ccurl_slot_pool *pool);
/// A slot, or NULL when the pool has none to give.
void *ccurl_slot_pool_take(ccurl_slot_pool *pool);
/// Returns a slot taken from this pool. Aborts on a pointer that is not a slot's start, or on more returns than
/// slots handed out, rather than let one slot go to two owners.
void ccurl_slot_pool_give_back(ccurl_slot_pool *pool, void *slot);
/// Gives the pages of idle slots back to the system (MADV_DONTNEED): the slots given back before the previous call
/// and not taken since, except the `keep` given back last. A slot released so costs nothing until it is written to
/// again. Call it periodically (the first call only starts the watch); returns the slots released now.
size_t ccurl_slot_pool_release_idle(ccurl_slot_pool *pool, size_t keep);
/// Asks for the pages of the slot that holds `pointer` to go back to the system while the slot stays handed out: for
/// its holder only, once it no longer needs the contents (they read as zero afterwards, and pages come back as
/// written). Carried out at the next ccurl_slot_pool_flush_discards (or once 64 are asked), which gives neighbouring
/// slots back in one call (a madvise is a system call, and on a process running on several cores it interrupts the
/// others to flush their TLBs). The holder must not write to the slot again before that flush unless it first takes
/// the request back with ccurl_slot_pool_cancel_discard; a slot given back meanwhile is not discarded (its next
/// holder's contents are kept). 1 if asked; 0 for a pointer outside the pool or a slot never handed out.
int ccurl_slot_pool_discard_later(ccurl_slot_pool *pool, const void *pointer);
/// Takes back a ccurl_slot_pool_discard_later not flushed yet: 1 if there was one.
int ccurl_slot_pool_cancel_discard(ccurl_slot_pool *pool, const void *pointer);
/// Gives back the pages of the slots asked with ccurl_slot_pool_discard_later since the last flush and still asked;
/// returns how many.
size_t ccurl_slot_pool_flush_discards(ccurl_slot_pool *pool);
/// Whether `pointer` lies inside this pool's reserved address space.
int ccurl_slot_pool_contains(const ccurl_slot_pool *pool, const void *pointer);
void ccurl_slot_pool_read_stats(ccurl_slot_pool *pool, ccurl_slot_pool_stats *stats);

/// The allocation functions libcurl is given, against an explicit pool (the global ones below use the process's
/// pool): sizes in (slot_bytes / 2, slot_bytes] come from the pool, everything else from malloc.
void *ccurl_pooled_malloc(ccurl_slot_pool *pool, size_t size);
void ccurl_pooled_free(ccurl_slot_pool *pool, void *pointer);
void *ccurl_pooled_realloc(ccurl_slot_pool *pool, void *pointer, size_t size);

/// Initialises libcurl once per process (later calls return the first one's CURLcode): curl_global_init_mem(flags, …)
/// with allocation functions that take libcurl's upload buffers from a process-wide pool of `slot_count` slots of
/// `slot_bytes`; the other functions are malloc's. The pool is kept only if libcurl then allocates from it (not when
/// libcurl had been initialised before, which keeps its allocator); otherwise, or when the pool cannot be reserved,
/// libcurl allocates from malloc alone. Never call curl_global_cleanup after it: a later curl_easy_init would
/// initialise libcurl again with malloc's functions while pooled buffers are still held.
int ccurl_global_init_pooled(long flags, size_t slot_bytes, size_t slot_count);
/// The process-wide pool's figures; all zero when libcurl does not allocate from one.
void ccurl_global_pool_read_stats(ccurl_slot_pool_stats *stats);
/// Whether `pointer` lies in the process-wide pool (0 when there is none).
int ccurl_global_pool_contains(const void *pointer);
/// ccurl_slot_pool_discard_later, ccurl_slot_pool_cancel_discard and ccurl_slot_pool_flush_discards on the process-wide
/// pool (0 when there is none).
int ccurl_global_pool_discard_later(const void *pointer);
int ccurl_global_pool_cancel_discard(const void *pointer);
size_t ccurl_global_pool_flush_discards(void);
/// ccurl_slot_pool_release_idle on the process-wide pool (0 when there is none).
size_t ccurl_global_pool_release_idle(size_t keep);
/// Gives malloc's free memory back to the system where it can (glibc's malloc_trim(0)); 1 if any was, 0 otherwise
/// and where the C library has no such call.
int ccurl_release_free_heap(void);

#endif

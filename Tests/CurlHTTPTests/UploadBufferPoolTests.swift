import CCurl
import CCurlMemory
import Foundation
import Glibc
import Testing
@testable import CurlHTTP

/// The slot pool libcurl's upload buffers come from: slots are page-aligned, reused last-returned-first, only the
/// pages written become resident (without transparent huge pages), sizes outside a slot's half-to-whole range go to
/// malloc, a full pool falls back, threads share it safely, and the process's libcurl allocates from it.
@Suite("libcurl's upload-buffer pool")
struct UploadBufferPoolTests {
    static let page = Int(sysconf(Int32(_SC_PAGESIZE)))

    static func stats(_ pool: OpaquePointer) -> ccurl_slot_pool_stats {
        var stats = ccurl_slot_pool_stats()
        ccurl_slot_pool_read_stats(pool, &stats)
        return stats
    }

    /// Pages of `bytes` at `start` the kernel holds in memory (mincore).
    static func residentPages(_ start: UnsafeMutableRawPointer, bytes: Int) -> Int {
        var vector = [UInt8](repeating: 0, count: (bytes + page - 1) / page)
        let result = mincore(start, bytes, &vector)
        precondition(result == 0, "mincore failed: \(errno)")
        return vector.filter { $0 & 1 == 1 }.count
    }

    @Test("slots are page-aligned and distinct; a full pool says so and counts the request it could not serve")
    func takesUntilFull() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 3, 2))
        defer { ccurl_slot_pool_destroy(pool) }
        #expect(Self.stats(pool).usable == 0)
        let first = try #require(ccurl_slot_pool_take(pool))
        #expect(Self.stats(pool).usable == 2)
        let second = try #require(ccurl_slot_pool_take(pool))
        let third = try #require(ccurl_slot_pool_take(pool))
        #expect(Self.stats(pool).usable == 3)
        let addresses = [first, second, third].map { Int(bitPattern: $0) }
        #expect(Set(addresses).count == 3)
        #expect(addresses.allSatisfy { $0 % Self.page == 0 })
        #expect(addresses.allSatisfy { ccurl_slot_pool_contains(pool, UnsafeRawPointer(bitPattern: $0)) == 1 })
        #expect(ccurl_slot_pool_take(pool) == nil)
        var stats = Self.stats(pool)
        #expect(stats.in_use == 3 && stats.high_water == 3 && stats.fallbacks == 1 && stats.capacity == 3)

        ccurl_slot_pool_give_back(pool, second)
        ccurl_slot_pool_give_back(pool, first)
        #expect(ccurl_slot_pool_take(pool) == first, "the slot returned last is handed out first")
        #expect(ccurl_slot_pool_take(pool) == second)
        for slot in [first, second, third] { ccurl_slot_pool_give_back(pool, slot) }
        stats = Self.stats(pool)
        #expect(stats.in_use == 0 && stats.high_water == 3)
    }

    @Test("a slot smaller than a page, or a size that cannot be rounded to pages, makes no pool")
    func refusesSizesItCannotServe() {
        #expect(ccurl_slot_pool_create(Self.page - 1, 4, 4) == nil)
        #expect(ccurl_slot_pool_create(Int.max, 4, 4) == nil)
        #expect(ccurl_slot_pool_create(16_384, Int.max / 4_096, 4) == nil)
        #expect(ccurl_slot_pool_create(16_384, 0, 4) == nil)
    }

    @Test("slot sizes are rounded up to whole pages")
    func slotSizeIsWholePages() throws {
        let pool = try #require(ccurl_slot_pool_create(5_000, 2, 2))
        defer { ccurl_slot_pool_destroy(pool) }
        #expect(Self.stats(pool).slot_bytes == (5_000 + Self.page - 1) / Self.page * Self.page)
        let first = try #require(ccurl_slot_pool_take(pool))
        let second = try #require(ccurl_slot_pool_take(pool))
        #expect(abs(Int(bitPattern: second) - Int(bitPattern: first)) == Int(Self.stats(pool).slot_bytes))
        ccurl_slot_pool_give_back(pool, first)
        ccurl_slot_pool_give_back(pool, second)
    }

    @Test("only the pages written to become resident: a body of a few hundred bytes costs one page, not four")
    func onlyWrittenPagesAreResident() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 8, 8))
        defer { ccurl_slot_pool_destroy(pool) }
        let slot = try #require(ccurl_slot_pool_take(pool))
        #expect(Self.residentPages(slot, bytes: 16_384) == 0)
        let body = Array("{\"receipt-data\":\"MIIT…\",\"password\":\"secret\"}".utf8)
        body.withUnsafeBytes { slot.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        #expect(Self.residentPages(slot, bytes: 16_384) == 1)
        #expect(memcmp(slot, body, body.count) == 0)

        // Given back and handed out again, the same slot still costs its one page.
        ccurl_slot_pool_give_back(pool, slot)
        let again = try #require(ccurl_slot_pool_take(pool))
        #expect(again == slot)
        body.withUnsafeBytes { again.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        #expect(Self.residentPages(again, bytes: 16_384) == 1)
        // A second slot, from the same usable chunk, is still untouched.
        let other = try #require(ccurl_slot_pool_take(pool))
        #expect(Self.residentPages(other, bytes: 16_384) == 0)
        ccurl_slot_pool_give_back(pool, other)
        ccurl_slot_pool_give_back(pool, again)
    }

    @Test("slots none took between two calls give their pages back, except the ones given back last; they read zero")
    func releasesIdleSlots() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 8, 8))
        defer { ccurl_slot_pool_destroy(pool) }
        var slots: [UnsafeMutableRawPointer] = []
        for index in 0..<6 {
            let slot = try #require(ccurl_slot_pool_take(pool))
            memset(slot, Int32(index + 1), 100)
            slots.append(slot)
        }
        for slot in slots { ccurl_slot_pool_give_back(pool, slot) }
        #expect(ccurl_slot_pool_release_idle(pool, 0) == 0, "the first call only starts the watch")
        // Taken and given back again in the interval: not idle, whatever its place.
        #expect(ccurl_slot_pool_take(pool) == slots[5])
        ccurl_slot_pool_give_back(pool, slots[5])

        // Slots 0–3 were idle the whole interval; 4 is kept (keep 2: 4 and 5 were given back last); 5 was taken.
        #expect(ccurl_slot_pool_release_idle(pool, 2) == 4)
        #expect(slots[0..<4].allSatisfy { Self.residentPages($0, bytes: 16_384) == 0 })
        #expect(slots[4...].allSatisfy { Self.residentPages($0, bytes: 16_384) == 1 })
        var stats = Self.stats(pool)
        #expect(stats.released == 4 && stats.returned == 6 && stats.in_use == 0)
        #expect(ccurl_slot_pool_release_idle(pool, 2) == 0, "released slots are not released again")

        // Handed out again: the kept ones first, then released ones, which read zero and can be written.
        #expect(ccurl_slot_pool_take(pool) == slots[5])
        #expect(ccurl_slot_pool_take(pool) == slots[4])
        let released = try #require(ccurl_slot_pool_take(pool))
        #expect(slots[0..<4].contains(released))
        let bytes = released.assumingMemoryBound(to: UInt8.self)
        #expect((0..<100).allSatisfy { bytes[$0] == 0 })
        memset(released, 0x5A, 100)
        #expect(Self.residentPages(released, bytes: 16_384) == 1)
        for slot in [released, slots[4], slots[5]] { ccurl_slot_pool_give_back(pool, slot) }
        stats = Self.stats(pool)
        #expect(stats.returned == 6 && stats.in_use == 0 && stats.released == 4)
    }

    @Test("a slot's holder can give its pages back and keep the slot: it reads zero and is written again as needed")
    func discardKeepsTheSlot() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 4, 4))
        defer { ccurl_slot_pool_destroy(pool) }
        let slot = try #require(ccurl_slot_pool_take(pool))
        memset(slot, 0x7E, 6_000)
        #expect(Self.residentPages(slot, bytes: 16_384) == 2)
        // Any address inside the slot names it (libcurl may read into the middle of its buffer).
        #expect(ccurl_slot_pool_discard_later(pool, slot + 5_000) == 1)
        #expect(ccurl_slot_pool_flush_discards(pool) == 1)
        #expect(Self.residentPages(slot, bytes: 16_384) == 0)
        var stats = Self.stats(pool)
        #expect(stats.in_use == 1 && stats.discarded == 1)
        memset(slot, 0x11, 100)
        #expect(Self.residentPages(slot, bytes: 16_384) == 1)
        // What was written before reads zero now (read last: reading maps pages in).
        let bytes = slot.assumingMemoryBound(to: UInt8.self)
        #expect(bytes[99] == 0x11 && (100..<6_000).allSatisfy { bytes[$0] == 0 })

        var outside = 0
        #expect(ccurl_slot_pool_discard_later(pool, &outside) == 0, "not the pool's")
        #expect(ccurl_slot_pool_discard_later(pool, slot + 3 * 16_384) == 0, "a slot never handed out")
        #expect(ccurl_slot_pool_flush_discards(pool) == 0)
        #expect(Self.stats(pool).discarded == 1)
        ccurl_slot_pool_give_back(pool, slot)
        stats = Self.stats(pool)
        #expect(stats.in_use == 0 && stats.returned == 1)
    }

    @Test("discards asked during a round are carried out together at the flush, neighbouring slots in one call")
    func discardLaterAtFlush() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 8, 8))
        defer { ccurl_slot_pool_destroy(pool) }
        let slots = try (0..<4).map { _ in try #require(ccurl_slot_pool_take(pool)) }
        for slot in slots { memset(slot, 0x5A, 5_000) }
        for slot in [slots[2], slots[0], slots[1]] { #expect(ccurl_slot_pool_discard_later(pool, slot + 100) == 1) }
        // Asked twice: carried out once.
        #expect(ccurl_slot_pool_discard_later(pool, slots[0]) == 1)
        // Nothing is given back before the flush.
        #expect(slots.allSatisfy { Self.residentPages($0, bytes: 16_384) == 2 })
        #expect(Self.stats(pool).discarded == 0)
        #expect(ccurl_slot_pool_flush_discards(pool) == 3)
        #expect(slots[0..<3].allSatisfy { Self.residentPages($0, bytes: 16_384) == 0 })
        #expect(Self.residentPages(slots[3], bytes: 16_384) == 2, "not asked")
        #expect(Self.stats(pool).discarded == 3)
        #expect(ccurl_slot_pool_flush_discards(pool) == 0, "each request is carried out once")

        var outside = 0
        #expect(ccurl_slot_pool_discard_later(pool, &outside) == 0, "not the pool's")
        #expect(ccurl_slot_pool_discard_later(pool, slots[0] + 6 * 16_384) == 0, "a slot never handed out")
        for slot in slots { ccurl_slot_pool_give_back(pool, slot) }
    }

    @Test("64 discards asked are carried out without waiting for the flush (a round may send thousands of requests)")
    func discardLaterBatch() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 80, 80))
        defer { ccurl_slot_pool_destroy(pool) }
        let slots = try (0..<65).map { _ in try #require(ccurl_slot_pool_take(pool)) }
        for slot in slots { memset(slot, 0x21, 100) }
        for slot in slots[0..<63] { #expect(ccurl_slot_pool_discard_later(pool, slot) == 1) }
        #expect(Self.stats(pool).discarded == 0)
        #expect(ccurl_slot_pool_discard_later(pool, slots[63]) == 1)
        #expect(Self.stats(pool).discarded == 64)
        #expect(slots[0..<64].allSatisfy { Self.residentPages($0, bytes: 16_384) == 0 })
        #expect(Self.residentPages(slots[64], bytes: 16_384) == 1)
        for slot in slots { ccurl_slot_pool_give_back(pool, slot) }
    }

    @Test("a discard not flushed yet is dropped when its holder takes it back or gives the slot back")
    func discardLaterCancelled() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 4, 4))
        defer { ccurl_slot_pool_destroy(pool) }
        let kept = try #require(ccurl_slot_pool_take(pool))
        let returned = try #require(ccurl_slot_pool_take(pool))
        memset(kept, 0x33, 4_000)
        #expect(ccurl_slot_pool_discard_later(pool, kept) == 1)
        #expect(ccurl_slot_pool_discard_later(pool, returned) == 1)
        // The holder writes the buffer again (a retry): it takes its request back first.
        #expect(ccurl_slot_pool_cancel_discard(pool, kept) == 1)
        #expect(ccurl_slot_pool_cancel_discard(pool, kept) == 0, "nothing left to take back")
        // The other slot goes to a new holder, who writes into it before the flush.
        ccurl_slot_pool_give_back(pool, returned)
        let reused = try #require(ccurl_slot_pool_take(pool))
        #expect(reused == returned)
        memset(reused, 0x44, 4_000)
        #expect(ccurl_slot_pool_flush_discards(pool) == 0)
        let keptBytes = kept.assumingMemoryBound(to: UInt8.self)
        let reusedBytes = reused.assumingMemoryBound(to: UInt8.self)
        #expect((0..<4_000).allSatisfy { keptBytes[$0] == 0x33 && reusedBytes[$0] == 0x44 })
        ccurl_slot_pool_give_back(pool, kept)
        ccurl_slot_pool_give_back(pool, reused)
    }

    @Test("a discard asked after the slot was given back does not reach its next holder; asking and taking back repeatedly stays in bounds")
    func staleDiscardAndRepeatedAsks() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 2, 2))
        defer { ccurl_slot_pool_destroy(pool) }
        let slot = try #require(ccurl_slot_pool_take(pool))
        ccurl_slot_pool_give_back(pool, slot)
        // A holder that asks too late, after giving the slot back.
        #expect(ccurl_slot_pool_discard_later(pool, slot) == 1)
        let next = try #require(ccurl_slot_pool_take(pool))
        #expect(next == slot)
        memset(next, 0x09, 100)
        #expect(ccurl_slot_pool_flush_discards(pool) == 0)
        #expect(next.assumingMemoryBound(to: UInt8.self)[99] == 0x09)
        // Asked and taken back many times over a pool of two slots: an ask taken back leaves its entry in the list
        // of asks, which holds one per slot; once it is full the asks are carried out at once (the one just asked
        // then has nothing left to take back) rather than written past its end.
        let before = Self.stats(pool).discarded
        var takenBack = 0
        for _ in 0..<10_000 {
            #expect(ccurl_slot_pool_discard_later(pool, next) == 1)
            takenBack += Int(ccurl_slot_pool_cancel_discard(pool, next))
        }
        let carriedOut = Int(Self.stats(pool).discarded - before)
        #expect(takenBack + carriedOut == 10_000 && carriedOut > 0, "\(takenBack) taken back, \(carriedOut) carried out")
        ccurl_slot_pool_give_back(pool, next)
    }

    @Test("the pool's memory is marked against transparent huge pages (a 2 MiB page would make 128 slots resident)")
    func noTransparentHugePages() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 1_024, 1_024))
        defer { ccurl_slot_pool_destroy(pool) }
        let slot = try #require(ccurl_slot_pool_take(pool))
        defer { ccurl_slot_pool_give_back(pool, slot) }
        let address = UInt(bitPattern: slot)
        // Read to the end: /proc hands it over a page at a time, and String(contentsOfFile:) stops after the first.
        let file = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? file.close() }
        let smaps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        var inMapping = false
        var flags: String?
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if let range = fields.first, range.contains("-"), fields.count >= 5 {
                let ends = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inMapping = ends.count == 2 && ends[0] <= address && address < ends[1]
            } else if inMapping, line.hasPrefix("VmFlags:") {
                flags = String(line)
                break
            }
        }
        let found = try #require(flags, "no mapping in /proc/self/smaps holds the slot")
        #expect(found.split(separator: " ").contains("nh"), "\(found)")
    }

    @Test("threads taking and giving back slots at once: no slot is handed to two of them, and all come back")
    func sharedByThreads() async throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 64, 16))
        defer { ccurl_slot_pool_destroy(pool) }
        let shared = UInt(bitPattern: pool)
        await withTaskGroup(of: Int.self) { group in
            for thread in 1...4 {
                group.addTask {
                    let pool = OpaquePointer(bitPattern: shared)!
                    var clashes = 0
                    for round in 0..<5_000 {
                        guard let slot = ccurl_slot_pool_take(pool) else { continue }
                        let mark = slot.assumingMemoryBound(to: Int.self)
                        mark[1] = thread &* 1_000_000 &+ round
                        sched_yield()
                        if mark[1] != thread &* 1_000_000 &+ round { clashes += 1 }
                        ccurl_slot_pool_give_back(pool, slot)
                    }
                    return clashes
                }
            }
            #expect(await group.reduce(0, +) == 0)
        }
        let stats = Self.stats(pool)
        #expect(stats.in_use == 0 && stats.high_water >= 1 && stats.high_water <= 4)
    }

    @Test("sizes in (slot / 2, slot] come from the pool, smaller and larger ones from malloc; free tells them apart")
    func routesBySize() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 4, 4))
        defer { ccurl_slot_pool_destroy(pool) }
        for (size, pooled) in [(16_384, true), (8_193, true), (8_192, false), (100, false), (16_385, false)] {
            let block = try #require(ccurl_pooled_malloc(pool, size))
            #expect((ccurl_slot_pool_contains(pool, block) == 1) == pooled, "\(size) bytes")
            memset(block, 0xA5, size)
            ccurl_pooled_free(pool, block)
        }
        #expect(Self.stats(pool).in_use == 0)
        ccurl_pooled_free(pool, nil)
        #expect(ccurl_pooled_malloc(nil, 16_384).map { ccurl_pooled_free(nil, $0) } != nil, "no pool: malloc")
    }

    @Test("realloc keeps a slot while the size fits, moves the contents to malloc when it does not, and frees at 0")
    func reallocation() throws {
        let pool = try #require(ccurl_slot_pool_create(16_384, 4, 4))
        defer { ccurl_slot_pool_destroy(pool) }
        let slot = try #require(ccurl_pooled_realloc(pool, nil, 12_000))
        #expect(ccurl_slot_pool_contains(pool, slot) == 1)
        let bytes = slot.assumingMemoryBound(to: UInt8.self)
        for index in 0..<16_384 { bytes[index] = UInt8(truncatingIfNeeded: index &* 7) }
        #expect(ccurl_pooled_realloc(pool, slot, 16_000) == slot)
        let moved = try #require(ccurl_pooled_realloc(pool, slot, 40_000))
        #expect(ccurl_slot_pool_contains(pool, moved) == 0)
        #expect(Self.stats(pool).in_use == 0)
        let movedBytes = moved.assumingMemoryBound(to: UInt8.self)
        #expect((0..<16_384).allSatisfy { movedBytes[$0] == UInt8(truncatingIfNeeded: $0 &* 7) })
        ccurl_pooled_free(pool, moved)

        let another = try #require(ccurl_pooled_malloc(pool, 16_384))
        #expect(ccurl_pooled_realloc(pool, another, 0) == nil)
        #expect(Self.stats(pool).in_use == 0)
    }

    @Test("the process's libcurl allocates from the pool, sized to its upload buffer")
    func processPool() throws {
        let pool = CurlGlobal.uploadBufferPool
        #expect(CurlGlobal.initializationCode == 0)
        #expect(pool.slotBytes == CurlGlobal.uploadBufferBytes)
        #expect(pool.capacity == CurlGlobal.uploadBufferSlots)
        #expect(pool.fallbacks == 0)
        // curl_easy_unescape returns memory from libcurl's allocator, length + 1 bytes: 12,001 is a pool size.
        let text = String(repeating: "a", count: 12_000)
        let copy = try #require(curl_easy_unescape(nil, text, 12_000, nil))
        #expect(ccurl_global_pool_contains(copy) == 1)
        #expect(String(cString: copy) == text)
        curl_free(copy)
        let small = try #require(curl_easy_unescape(nil, "abc", 3, nil))
        #expect(ccurl_global_pool_contains(small) == 0)
        curl_free(small)
    }
}

/// Makes hostile variants of real ASN.1 (BER/DER) documents: bit flips, bytes inserted and deleted, lengths made huge
/// or indefinite, INTEGER contents made huge or most negative, deep nesting, truncation. Several may stack.
struct DERMutator {
    struct Seed {
        var bytes: [UInt8]
        /// The content of each short-form INTEGER (tag 0x02) found by a byte scan (some are not really integers).
        var integers: [Range<Int>] = []
        /// Where a tag with a length byte seems to be: candidates for length corruption.
        var lengths: [Int] = []

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            var index = 0
            while index + 1 < bytes.count {
                let tag = bytes[index]
                let length = Int(bytes[index + 1])
                if tag == 0x02, length > 0, length < 0x80, index + 2 + length <= bytes.count {
                    integers.append((index + 2)..<(index + 2 + length))
                }
                if [0x02, 0x04, 0x0C, 0x16, 0x30, 0x31, 0xA0].contains(tag) { lengths.append(index + 1) }
                index += 1
            }
        }
    }

    /// INTEGER contents: past 64 bits, the most negative, zero-padded, empty-ish.
    static let hostileIntegers: [[UInt8]] = [
        [0x80, 0, 0, 0, 0, 0, 0, 0], [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        [0x00, 0x80, 0, 0, 0, 0, 0, 0, 0], [0x01, 0, 0, 0, 0, 0, 0, 0, 0], [0xFF], [0x80],
        [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01], [0x00], [0x00, 0x00],
        Array(repeating: 0x7F, count: 40),
    ]
    /// Length encodings: huge, indefinite, long forms that overflow 32 and 64 bits, reserved.
    static let hostileLengths: [[UInt8]] = [
        [0x80], [0x84, 0xFF, 0xFF, 0xFF, 0xFF], [0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        [0x89, 0x01, 0, 0, 0, 0, 0, 0, 0, 0], [0xFF], [0x81, 0x00], [0x82, 0x00, 0x01], [0x84, 0x7F, 0xFF, 0xFF, 0xFF],
        [0x8F] + Array(repeating: 0xFF, count: 15),
    ]
    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x02, 0x04, 0x05, 0x0C, 0x16, 0x1F, 0x30, 0x31, 0x7F, 0x80,
                                            0x81, 0x84, 0xA0, 0xFF]

    let seeds: [Seed]
    var nestPercent = 2
    var hugeNestEvery = 25

    init(seeds: [[UInt8]]) {
        self.seeds = seeds.map(Seed.init)
    }

    func mutate(using random: inout FuzzRandom) -> [UInt8] {
        let seed = random.pick(seeds)
        var bytes = seed.bytes
        mutateOnce(&bytes, seed: seed, using: &random)
        var more = random.below(3)
        while more > 0 {
            mutateOnce(&bytes, seed: nil, using: &random)
            more -= 1
        }
        return bytes
    }

    private func mutateOnce(_ bytes: inout [UInt8], seed: Seed?, using random: inout FuzzRandom) {
        guard !bytes.isEmpty else { return }
        if random.chance(nestPercent) { return nest(&bytes, using: &random) }
        switch random.below(seed == nil ? 5 : 9) {
        case 0:
            for _ in 0...random.below(4) { bytes[random.below(bytes.count)] ^= 1 << UInt8(random.below(8)) }
        case 1:
            let inserted = (0...random.below(8)).map { _ in random.pick(Self.interestingBytes) }
            bytes.insert(contentsOf: inserted, at: random.below(bytes.count + 1))
        case 2:
            let start = random.below(bytes.count)
            bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(random.chance(80) ? 4 : 300)))
        case 3:
            bytes[random.below(bytes.count)] = random.pick(Self.interestingBytes)
        case 4:
            bytes.removeSubrange(random.below(bytes.count)...)
        case 5, 6:
            // An INTEGER's content replaced, its length byte fixed up (outer lengths then disagree, as an attacker
            // may make them) or, half the time, the same length kept by overwriting in place.
            guard let seed, !seed.integers.isEmpty else { return bytes[random.below(bytes.count)] ^= 0x80 }
            let range = random.pick(seed.integers)
            let content = random.pick(Self.hostileIntegers)
            if random.chance(50) {
                for (offset, byte) in content.prefix(range.count).enumerated() { bytes[range.lowerBound + offset] = byte }
            } else {
                bytes.replaceSubrange(range, with: content)
                bytes[range.lowerBound - 1] = UInt8(content.count)
            }
        default:
            guard let seed, !seed.lengths.isEmpty else { bytes.removeLast(); return }
            let at = random.pick(seed.lengths)
            guard at < bytes.count else { return }
            bytes.replaceSubrange(at...at, with: random.pick(Self.hostileLengths))
        }
    }

    /// SEQUENCEs (or SETs, or [0]) nested deep, definite or indefinite length, up to 100,000 levels.
    private func nest(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        let depth = random.below(hugeNestEvery) == 0 ? 100_000 : 1 + random.below(2_000)
        let tag: UInt8 = random.pick([0x30, 0x31, 0xA0, 0x24])
        // Indefinite lengths (tag, 0x80 … 0x00 0x00): no arithmetic needed to close them. Made with whole-array
        // operations: a loop of appends would cost more, in a debug build, than the decoding it feeds.
        var nested = [UInt8](repeating: 0x80, count: depth * 2)
        nested.withUnsafeMutableBufferPointer { buffer in
            for index in stride(from: 0, to: buffer.count, by: 2) { buffer[index] = tag }
        }
        nested += random.chance(50) ? [0x02, 0x01, 0x01] : Array(bytes.prefix(64))
        if random.chance(85) { nested += [UInt8](repeating: 0x00, count: depth * 2) }
        let at = random.below(bytes.count + 1)
        bytes = random.chance(50) ? nested : Array(bytes[..<at]) + nested + Array(bytes[at...])
    }
}

/// Makes hostile variants of real JSON documents: bit flips, bytes inserted and deleted, huge, negative and odd numbers
/// spliced over the numbers (bare or quoted, as Apple writes them), values of another type, keys given twice, deep
/// nesting, truncation. Several mutations may stack on one input.
struct JSONMutator {
    /// One seed, with where its parts lie (found once, so each mutation costs a copy and a splice).
    struct Seed {
        var bytes: [UInt8]
        /// Numbers and quoted numbers ("1594755400000", 1234).
        var numbers: [Range<Int>] = []
        /// Every value that follows a `:` (numbers, strings, literals; objects and arrays by their first byte).
        var values: [Range<Int>] = []
        /// Member names with their quotes and colon (`"signedDate":`).
        var keys: [[UInt8]] = []
        /// Where an object opens (just after its `{`).
        var objectStarts: [Int] = []

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            var index = 0
            var afterColon = false
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    let start = index
                    index += 1
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                        index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    index = min(index + 1, bytes.count)
                    let range = start..<index
                    var next = index
                    while next < bytes.count, bytes[next] == UInt8(ascii: " ") { next += 1 }
                    if next < bytes.count, bytes[next] == UInt8(ascii: ":"), !afterColon {
                        keys.append(Array(bytes[start...next]))
                    } else if afterColon {
                        values.append(range)
                        let inner = bytes[(start + 1)..<max(start + 1, index - 1)]
                        if !inner.isEmpty, inner.allSatisfy({ Self.isNumberByte($0) }) { numbers.append(range) }
                    }
                    afterColon = false
                    continue
                case UInt8(ascii: ":"):
                    afterColon = true
                case UInt8(ascii: "{"):
                    objectStarts.append(index + 1)
                    if afterColon { values.append(index..<(index + 1)) }
                    afterColon = false
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    let start = index
                    while index < bytes.count, Self.isNumberByte(bytes[index]) { index += 1 }
                    numbers.append(start..<index)
                    if afterColon { values.append(start..<index) }
                    afterColon = false
                    continue
                case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                    if afterColon {
                        let start = index
                        while index < bytes.count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[index]) {
                            index += 1
                        }
                        values.append(start..<index)
                        afterColon = false
                        continue
                    }
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                    break
                default:
                    afterColon = false
                }
                index += 1
            }
        }

        static func isNumberByte(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                || byte == UInt8(ascii: "+")
        }
    }

    /// Numbers that break naive conversions: past Int64 either way, past Double, not integers, negative zero.
    static let hostileNumbers: [String] = [
        "1e300", "-1e300", "9223372036854775808", "-9223372036854775809", "9223372036854775807",
        "-9223372036854775808", "-0", "1.5e-400", "1e400", "-1e400", "18446744073709551616", "1e19", "-1e19",
        "9.223372036854775807e18", "9223372036854775807.5", "0.5", "-1", "-0.0", "1E+308", "4.9e-324",
        "99999999999999999999999999999999999999", "1e18", "999999999999999999", "1.0", "0", "2147483648",
        "-2147483649", "1e-7", "123456789012345678901234567890e-20",
    ]
    /// What a value may become instead.
    static let otherValues: [String] = [
        "null", "true", "false", "{}", "[]", "\"\"", "\" \"", "\"x\"", "{\"a\":1}", "[1,2]", "[null]",
        "\"\\u0000\"", "\"\\ud800\"", "\"true\"", "\"1\"", "\"-\"", "\"  12 \"", "\"0x10\"",
    ]
    static let structuralBytes: [UInt8] = Array("\"\\{}[],:-.0eE \u{0}".utf8) + [0xFF, 0xC3, 0x80, 0xED]

    let seeds: [Seed]
    /// Percent of inputs that get a deep nest; one in `hugeNestEvery` of those is 100,000 deep.
    var nestPercent = 2
    var hugeNestEvery = 25

    init(seeds: [[UInt8]]) {
        self.seeds = seeds.map(Seed.init)
    }

    func mutate(using random: inout FuzzRandom) -> [UInt8] {
        let seed = random.pick(seeds)
        var bytes = seed.bytes
        // The first mutation may use the seed's map; later ones work on whatever bytes are there.
        mutateOnce(&bytes, seed: seed, using: &random)
        var more = random.below(3)
        while more > 0 {
            mutateOnce(&bytes, seed: nil, using: &random)
            more -= 1
        }
        return bytes
    }

    private func mutateOnce(_ bytes: inout [UInt8], seed: Seed?, using random: inout FuzzRandom) {
        if random.chance(nestPercent) { return nest(&bytes, using: &random) }
        switch random.below(seed == nil ? 5 : 9) {
        case 0: flipBits(&bytes, using: &random)
        case 1: insertBytes(&bytes, using: &random)
        case 2: deleteBytes(&bytes, using: &random)
        case 3: overwriteStructural(&bytes, using: &random)
        case 4: truncate(&bytes, using: &random)
        case 5, 6:
            // Numbers are where conversions trap: the most likely mutation of a fresh seed.
            guard let seed, !seed.numbers.isEmpty else { return flipBits(&bytes, using: &random) }
            let range = random.pick(seed.numbers)
            var number = random.pick(Self.hostileNumbers)
            if random.chance(40) { number = "\"\(number)\"" }
            bytes.replaceSubrange(range, with: Array(number.utf8))
        case 7:
            guard let seed, !seed.values.isEmpty else { return insertBytes(&bytes, using: &random) }
            let range = random.pick(seed.values)
            let closing = bytes[range.lowerBound] == UInt8(ascii: "{") ? matchingEnd(bytes, from: range.lowerBound) : nil
            bytes.replaceSubrange(closing.map { range.lowerBound..<$0 } ?? range, with: Array(random.pick(Self.otherValues).utf8))
        default:
            // A member given twice: the second copy with a hostile or other-typed value.
            guard let seed, !seed.keys.isEmpty, !seed.objectStarts.isEmpty else { return truncate(&bytes, using: &random) }
            let key = random.pick(seed.keys)
            let value = random.chance(50) ? random.pick(Self.hostileNumbers) : random.pick(Self.otherValues)
            let at = random.pick(seed.objectStarts)
            let isEmptyObject = at < bytes.count && bytes[at] == UInt8(ascii: "}")
            bytes.insert(contentsOf: key + Array(value.utf8) + (isEmptyObject ? [] : [UInt8(ascii: ",")]), at: at)
        }
    }

    /// The index just past the object or array that opens at `start`, if it closes.
    private func matchingEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var depth = 0
        var index = start
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") { index += 1 } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
            index += 1
        }
        return nil
    }

    private func flipBits(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        guard !bytes.isEmpty else { return }
        for _ in 0...random.below(4) {
            bytes[random.below(bytes.count)] ^= 1 << UInt8(random.below(8))
        }
    }

    private func insertBytes(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        let count = 1 + random.below(8)
        let inserted = (0..<count).map { _ in
            random.chance(50) ? random.pick(Self.structuralBytes) : UInt8(truncatingIfNeeded: random.next())
        }
        bytes.insert(contentsOf: inserted, at: random.below(bytes.count + 1))
    }

    private func deleteBytes(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        guard !bytes.isEmpty else { return }
        let start = random.below(bytes.count)
        let count = min(bytes.count - start, 1 + random.below(random.chance(80) ? 4 : 200))
        bytes.removeSubrange(start..<(start + count))
    }

    private func overwriteStructural(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        guard !bytes.isEmpty else { return }
        bytes[random.below(bytes.count)] = random.pick(Self.structuralBytes)
    }

    private func truncate(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        bytes.removeSubrange(random.below(bytes.count + 1)...)
    }

    /// Arrays or objects nested deep, at a random place (most often the start of a value): up to 100,000 levels; a
    /// fifth of the time left open at the end of the input, around 512 levels (where Foundation's JSONDecoder traps).
    private func nest(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        if random.chance(20), let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            let depth = 509 + random.below(6)
            bytes = Array(bytes[...colon]) + Array(repeating: UInt8(ascii: "["), count: depth)
            return
        }
        let depth = random.below(hugeNestEvery) == 0 ? 100_000 : 1 + random.below(2_000)
        let arrays = random.chance(70)
        // Whole-array operations: a loop of appends would cost more, in a debug build, than the decoding it feeds.
        var nested: [UInt8]
        if arrays {
            nested = [UInt8](repeating: UInt8(ascii: "["), count: depth)
        } else {
            let member = Array("{\"a\":".utf8)
            nested = [UInt8](repeating: 0, count: depth * member.count)
            nested.withUnsafeMutableBufferPointer { buffer in
                for index in buffer.indices { buffer[index] = member[index % member.count] }
            }
        }
        nested.append(UInt8(ascii: "1"))
        if random.chance(85) {  // else left open
            nested += [UInt8](repeating: arrays ? UInt8(ascii: "]") : UInt8(ascii: "}"), count: depth)
        }
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), random.chance(70) {
            bytes.insert(contentsOf: nested, at: colon + 1)
        } else {
            bytes = random.chance(50) ? nested : bytes + nested
        }
    }
}

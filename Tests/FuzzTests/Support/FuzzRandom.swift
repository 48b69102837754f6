import Foundation

/// SplitMix64: a small, fast generator whose whole sequence follows from its seed, so a failing input can be made
/// again. The seed is `FUZZ_SEED` when set (decimal or 0x-hex), else a fixed one; every test prints the one it used.
struct FuzzRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (bound > 0).
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// True with probability `percent` / 100.
    mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }

    mutating func pick<T>(_ items: [T]) -> T {
        items[below(items.count)]
    }

    /// The run's seed, and the one each decoder's generator starts from (the run's, mixed with the decoder's name, so
    /// that the decoders do not see the same sequence and adding one does not change the others').
    static let runSeed: UInt64 = {
        let text = ProcessInfo.processInfo.environment["FUZZ_SEED"] ?? ""
        if text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
        return UInt64(text) ?? 0x2022_0022_F022_0022
    }()

    static func forDecoder(_ name: String) -> FuzzRandom {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return FuzzRandom(seed: runSeed ^ hash)
    }
}

import Foundation
import Testing

/// What became of one decoder's inputs. An input that traps ends the test process: the run then has no summary,
/// which `scripts/test.sh` counts as a failure, and the seed printed before the run makes the same inputs again
/// (`FUZZ_SEED=…`; `FUZZ_SAVE=path` writes each input to `path-<decoder>` before it is decoded, so the one that
/// trapped is left there).
struct FuzzTally {
    /// Inputs the decoder accepted.
    var decoded = 0
    /// Inputs it refused with its own error (or error value).
    var refused = 0
    /// Inputs it refused with an error of another type: each is a failure.
    var foreignErrors = 0
    var firstForeignError: String?

    mutating func foreign(_ error: any Error) {
        foreignErrors += 1
        if firstForeignError == nil { firstForeignError = "\(type(of: error)): \(error)" }
    }
}

enum FuzzRun {
    /// Inputs per decoder: the issue asks for at least 100,000.
    static let inputsPerDecoder = 100_000

    static let savePath = ProcessInfo.processInfo.environment["FUZZ_SAVE"]

    /// Feeds `count` inputs made by `make` to `decode`, and checks that every one decoded or was refused with the
    /// decoder's own error.
    static func run<Input>(
        _ name: String,
        count: Int = inputsPerDecoder,
        make: (inout FuzzRandom) -> Input,
        bytes: (Input) -> [UInt8],
        decode: (Input, inout FuzzTally) -> Void
    ) -> FuzzTally {
        var random = FuzzRandom.forDecoder(name)
        print("fuzz \(name): FUZZ_SEED=0x\(String(FuzzRandom.runSeed, radix: 16)), \(count) inputs")
        var tally = FuzzTally()
        let started = ContinuousClock.now
        for _ in 0..<count {
            let input = make(&random)
            if let savePath {
                _ = FileManager.default.createFile(atPath: "\(savePath)-\(name)", contents: Data(bytes(input)))
            }
            decode(input, &tally)
        }
        let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - started).components.seconds)
        print(
            "fuzz \(name): \(tally.decoded) decoded, \(tally.refused) refused, \(tally.foreignErrors) other errors, "
                + String(format: "%.1f s", seconds)
        )
        #expect(tally.decoded + tally.refused + tally.foreignErrors == count)
        #expect(tally.foreignErrors == 0, "\(name): \(tally.firstForeignError ?? "")")
        // Mutations that leave a document readable must happen too, or the decoder's paths past its first check go
        // unexercised.
        #expect(tally.decoded > count / 100, "\(name): only \(tally.decoded) of \(count) inputs decoded")
        return tally
    }
}

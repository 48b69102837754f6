import Foundation
import JSONText

/// Writing without Foundation's `JSONEncoder` (the request body of every call to Apple, every answer of the fake App
/// Store): the document the `Encodable` conformance makes, from the same fields. Debug builds compare the two.
extension JSONModel {
    /// The JSON text of the value.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONTextWriter(capacity: expectedJSONSize)
        write(to: &writer)
        #if DEBUG
        if let reference = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(self)) as? NSDictionary {
            let written = try? JSONSerialization.jsonObject(with: Data(writer.bytes)) as? NSDictionary
            assert(reference == written, "jsonBytes() differs from JSONEncoder")
        }
        #endif
        return writer.bytes
    }

    public func write(to writer: inout JSONTextWriter) {
        writer.open()
        withUnsafePointer(to: self) { model in
            Self.fields.all.withUnsafeBufferPointer { fields in
                for index in fields.indices {
                    fields[index].write(model, &writer)
                }
            }
        }
        writer.close()
    }

    public func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        write(to: &writer)
    }
}

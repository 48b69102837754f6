@testable import AppStoreModel
import Foundation
import Testing

/// One declaration, every path: a value with every property set goes through the writer, `JSONEncoder`,
/// `JSONScanner` and `JSONDecoder` and comes back whole; and each declared key, taken out alone, empties on both
/// decoding paths the one property it names. A property without a field, a field missing from one path, or a key
/// filling the wrong property fails here.
@Suite("JSONModel: every declared field on every path")
struct FieldListTests {
    @Test("VerifyReceiptResponse")
    func response() throws { try checkEveryPath(Samples.response) }

    @Test("ReceiptInfo")
    func receipt() throws { try checkEveryPath(Samples.receipt) }

    @Test("InAppTransaction")
    func transaction() throws { try checkEveryPath(Samples.transaction) }

    @Test("PendingRenewalInfo")
    func renewal() throws { try checkEveryPath(Samples.renewal) }

    @Test("VerifyReceiptRequest")
    func request() throws { try checkEveryPath(Samples.request) }

    private func checkEveryPath<Model: JSONModel>(_ full: Model) throws {
        let keys = Model.fields.all.map(\.key.description)
        let properties = Mirror(reflecting: full).children.compactMap { child in child.label.map { ($0, child.value) } }
        #expect(properties.count == keys.count, "\(Model.self): \(properties.count) properties, \(keys.count) fields")
        for (label, value) in properties {
            #expect(!isNil(value), "\(Model.self).\(label) is nil in the sample: set it so that every path carries it")
            #expect(spellings(of: label).contains(where: keys.contains), "\(Model.self).\(label) has no field")
        }

        let written = full.jsonBytes()
        let encoded = try JSONEncoder().encode(full)
        #expect(try Model.scanned(written) == full, "writer → JSONScanner")
        #expect(try JSONDecoder().decode(Model.self, from: Data(written)) == full, "writer → JSONDecoder")
        #expect(try Model.scanned(Array(encoded)) == full, "JSONEncoder → JSONScanner")
        #expect(try JSONDecoder().decode(Model.self, from: encoded) == full, "JSONEncoder → JSONDecoder")
        let writtenObject = try object(Array(written))
        #expect(writtenObject as NSDictionary == (try object(Array(encoded))) as NSDictionary, "writer ≠ JSONEncoder")
        #expect(Set(writtenObject.keys) == Set(keys), "written keys")

        for field in Model.fields.all {
            let key = field.key.description
            var document = writtenObject
            document[key] = nil
            let bytes = Array(try JSONSerialization.data(withJSONObject: document))
            let reference = try? JSONDecoder().decode(Model.self, from: Data(bytes))
            #expect((try? Model.scanned(bytes)) == reference, "\(Model.self) without \(key): the decoders disagree")
            if field.missingMessage != nil {
                #expect(reference == nil, "\(Model.self) without the required \(key) decodes")
                continue
            }
            let decoded = try #require(reference, "\(Model.self) without \(key) does not decode")
            let changed = changedProperties(full, decoded)
            #expect(
                changed.count == 1 && spellings(of: changed[0]).contains(key),
                "\(Model.self) without \(key) changes \(changed)"
            )

            for alternative in field.alternativeKeys.map(\.description) {
                var renamed = writtenObject
                renamed[alternative] = renamed.removeValue(forKey: key)
                let bytes = Array(try JSONSerialization.data(withJSONObject: renamed))
                #expect(try Model.scanned(bytes) == full, "\(key) spelled \(alternative), JSONScanner")
                #expect(try JSONDecoder().decode(Model.self, from: Data(bytes)) == full, "\(alternative), JSONDecoder")
            }
        }
    }

    /// The labels of the properties that differ.
    private func changedProperties<Model>(_ before: Model, _ after: Model) -> [String] {
        zip(Mirror(reflecting: before).children, Mirror(reflecting: after).children).compactMap { old, new in
            String(describing: old.value) == String(describing: new.value) ? nil : old.label
        }
    }

    /// The key a property's name stands for: `webOrderLineItemId` → `web_order_line_item_id`, or with hyphens
    /// (`exclude-old-transactions`, in the request).
    private func spellings(of label: String) -> [String] {
        let snake = label.reduce(into: "") { key, character in
            key += character.isUppercase ? "_" + character.lowercased() : String(character)
        }
        return [snake, snake.replacingOccurrences(of: "_", with: "-")]
    }

    private func isNil(_ value: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }

    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }
}

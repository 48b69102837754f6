import AppStoreModel
import Foundation
import LoopbackHTTP

extension LoopbackHTTPClient {
    /// POSTs a verifyReceipt body.
    func verify(_ path: String, receiptData: String, password: String? = nil) throws -> Response {
        var object: [String: String] = ["receipt-data": receiptData]
        object["password"] = password
        let body = try JSONSerialization.data(withJSONObject: object)
        return try request("POST", path, body: body, headers: [("Content-Type", "application/json")])
    }

    /// POSTs a verifyReceipt body and decodes Apple's JSON answer.
    func answer(_ path: String, _ receiptData: String, password: String? = nil) throws -> VerifyReceiptResponse {
        try verify(path, receiptData: receiptData, password: password).json(VerifyReceiptResponse.self)
    }

    /// POSTs a verifyReceipt body and returns the `status` of the answer.
    func status(_ path: String, _ receiptData: String, password: String? = nil) throws -> Int {
        try answer(path, receiptData, password: password).status
    }
}

import AppStoreSignedData
import CurlHTTP
import Foundation

extension SignedTransaction {
    /// The transaction `jws` carries, once `verifier` has checked its chain and signature.
    public static func verified(
        _ jws: String, by verifier: SignedDataVerifier, now: Date = Date()
    ) throws(SignedDataError) -> SignedTransaction {
        try SignedTransaction(payload: verifier.verify(jws, now: now).payload)
    }
}

extension OCSPClient {
    /// OCSP over libcurl: the DER request POSTed to the responder named in the certificate (plain http, as OCSP
    /// responders are; their answers are signed), the DER answer read back.
    public static func curl(_ transport: CurlMultiTransport, timeoutSeconds: Double = 10) -> OCSPClient {
        OCSPClient { request, uri in
            let answer = await transport.send(
                HTTPRequest(
                    url: uri, body: request, headers: ["Content-Type: application/ocsp-request"],
                    connectTimeoutMilliseconds: Int(timeoutSeconds * 1000),
                    totalTimeoutMilliseconds: Int(timeoutSeconds * 1000), maxResponseBytes: 1 << 20
                )
            )
            let response = try answer.get()
            guard response.status == 200 else {
                throw OCSPHTTPError(status: response.status)
            }
            return response.body
        }
    }
}

struct OCSPHTTPError: Error, CustomStringConvertible {
    var status: Int
    var description: String { "the OCSP responder answered HTTP \(status)" }
}

import Foundation
import NIOSSL

extension FakeAppStoreServer {
    /// What serving TLS takes: the context every connection's handshake uses, and the authority's certificate.
    struct TLSSetup {
        let context: NIOSSLContext
        let authorityPEM: String
    }

    /// Makes a certificate for `options.names`, writes its authority's certificate where asked, and a TLS context
    /// offering HTTP/2 (when `http2`) and HTTP/1.1 through ALPN.
    static func makeTLS(_ options: FakeAppStoreTLS, http2: Bool) throws(FakeAppStoreError) -> TLSSetup {
        do {
            let certificates = try ServerCertificates(names: options.names)
            let authorityPEM = try certificates.authorityPEM()
            if let path = options.authorityCertificatePath {
                try Data(authorityPEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            }
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(try NIOSSLCertificate(bytes: certificates.serverDER(), format: .der))],
                privateKey: .privateKey(
                    try NIOSSLPrivateKey(bytes: Array(certificates.serverKey.pemRepresentation.utf8), format: .pem)
                )
            )
            configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
            return TLSSetup(context: try NIOSSLContext(configuration: configuration), authorityPEM: authorityPEM)
        } catch let error as FakeAppStoreError {
            throw error
        } catch {
            throw FakeAppStoreError(.tls, "cannot set up TLS: \(error)")
        }
    }
}

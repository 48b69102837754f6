extension AppReceipt {
    /// Reads the receipt payload (`SET OF ReceiptAttribute`) that a verified PKCS#7 signature covers: the very bytes
    /// whose digest was checked, so what is read is what was signed (no second parse of the container).
    public static func decode(signedContent: ArraySlice<UInt8>) throws(AppReceiptError) -> AppReceipt {
        try decode(payload: signedContent)
    }
}

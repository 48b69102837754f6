/// The App Store Server API's error codes that matter to this service (`errorCode` in an error body), with the
/// message Apple sends with each. What each one means for a purchase is the client's decision, not the model's.
public enum ServerAPIErrorCode: Int, Sendable, Hashable, CaseIterable {
    case generalBadRequest = 4000000
    case invalidAppIdentifier = 4000002
    case invalidRequestRevision = 4000005
    case invalidTransactionId = 4000006
    case invalidOriginalTransactionId = 4000008
    case startDateAfterEndDate = 4000013
    case invalidPaginationToken = 4000014
    case invalidStartDate = 4000015
    case invalidEndDate = 4000016
    case paginationTokenExpired = 4000017
    case multipleFiltersSupplied = 4000019
    /// Get Transaction History: `sort` is neither ASCENDING nor DESCENDING.
    case invalidSort = 4000021
    /// Get Transaction History: a `productId` that is not a product id.
    case invalidProductId = 4000023
    /// Set App Account Token: the body's appAccountToken is not a UUID.
    case invalidAppAccountTokenUUID = 4000183
    /// Set App Account Token: a purchase the customer has through Family Sharing.
    case familyTransactionNotSupported = 4000185
    /// Set App Account Token: the id is a transaction's, not its chain's original one.
    case transactionIdNotOriginalTransactionId = 4000187
    case accountNotFound = 4040001
    case accountNotFoundRetryable = 4040002
    case appNotFound = 4040003
    case appNotFoundRetryable = 4040004
    case originalTransactionIdNotFound = 4040005
    case originalTransactionIdNotFoundRetryable = 4040006
    case transactionIdNotFound = 4040010
    case rateLimitExceeded = 4290000
    case generalInternal = 5000000
    case generalInternalRetryable = 5000001

    /// The HTTP status Apple answers this code with.
    public var httpStatus: Int {
        rawValue / 10_000
    }

    /// Apple's `errorMessage`.
    public var message: String {
        switch self {
        case .generalBadRequest: "Bad request."
        case .invalidAppIdentifier: "Invalid request app identifier."
        case .invalidRequestRevision: "Invalid request revision."
        case .invalidTransactionId: "Invalid transaction id."
        case .invalidOriginalTransactionId: "Invalid original transaction id."
        case .startDateAfterEndDate: "Invalid request. The end date precedes the start date or the dates are the same."
        case .invalidPaginationToken: "Invalid pagination token."
        case .invalidStartDate: "Invalid request. The start date is not a timestamp value represented in milliseconds."
        case .invalidEndDate: "Invalid request. The end date is not a timestamp value represented in milliseconds."
        case .paginationTokenExpired: "Invalid request. The pagination token is expired."
        case .multipleFiltersSupplied:
            "Invalid request. Supply either a transaction id or a notification type, but not both."
        case .invalidSort: "Invalid request. The sort parameter is invalid."
        case .invalidProductId: "Invalid request. The product id parameter is invalid."
        case .invalidAppAccountTokenUUID: "Invalid request. The app account token field must be a valid UUID."
        case .familyTransactionNotSupported:
            "Invalid request. Family Sharing transactions aren't supported by this endpoint."
        case .transactionIdNotOriginalTransactionId:
            "Invalid request. The transaction ID provided is not an original transaction ID."
        case .accountNotFound: "Account not found."
        case .accountNotFoundRetryable: "Account not found. Please try again."
        case .appNotFound: "App not found."
        case .appNotFoundRetryable: "App not found. Please try again."
        case .originalTransactionIdNotFound: "Original transaction id not found."
        case .originalTransactionIdNotFoundRetryable: "Original transaction id not found. Please try again."
        case .transactionIdNotFound: "Transaction id not found."
        case .rateLimitExceeded: "Rate limit exceeded."
        case .generalInternal: "An unknown error occurred."
        case .generalInternalRetryable: "An unknown error occurred. Please try again."
        }
    }

    /// The error body Apple sends for this code.
    public var payload: ServerAPIErrorPayload {
        ServerAPIErrorPayload(errorCode: rawValue, errorMessage: message)
    }
}

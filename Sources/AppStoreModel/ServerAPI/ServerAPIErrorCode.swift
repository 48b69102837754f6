/// Every error code of the App Store Server API (`errorCode` in an error body), as Apple's App Store Server Library
/// (6.0) lists them, Retention Messaging's included, with the message the fake App Store sends with each: Apple's own
/// `errorMessage` for the codes seen in its answers, else what Apple's documentation says the code means. What each one
/// means for a request (retry, not found, our configuration) is the client's decision
/// (`ServerAPIErrorCode.errorClass` in AppStoreClient), not the model's.
public enum ServerAPIErrorCode: Int, Sendable, Hashable, CaseIterable {
    case generalBadRequest = 4000000
    case invalidAppIdentifier = 4000002
    case invalidRequestRevision = 4000005
    case invalidTransactionId = 4000006
    case invalidOriginalTransactionId = 4000008
    case invalidExtendByDays = 4000009
    case invalidExtendReasonCode = 4000010
    case invalidRequestIdentifier = 4000011
    case startDateTooFarInPast = 4000012
    case startDateAfterEndDate = 4000013
    case invalidPaginationToken = 4000014
    case invalidStartDate = 4000015
    case invalidEndDate = 4000016
    case paginationTokenExpired = 4000017
    case invalidNotificationType = 4000018
    case multipleFiltersSupplied = 4000019
    case invalidTestNotificationToken = 4000020
    case invalidSort = 4000021
    case invalidProductType = 4000022
    case invalidProductId = 4000023
    case invalidSubscriptionGroupIdentifier = 4000024
    case invalidExcludeRevoked = 4000025
    case invalidInAppOwnershipType = 4000026
    case invalidEmptyStorefrontCountryCodeList = 4000027
    case invalidStorefrontCountryCode = 4000028
    case invalidRevoked = 4000030
    case invalidStatus = 4000031
    case invalidAccountTenure = 4000032
    case invalidAppAccountToken = 4000033
    case invalidConsumptionStatus = 4000034
    case invalidCustomerConsented = 4000035
    case invalidDeliveryStatus = 4000036
    case invalidLifetimeDollarsPurchased = 4000037
    case invalidLifetimeDollarsRefunded = 4000038
    case invalidPlatform = 4000039
    case invalidPlayTime = 4000040
    case invalidSampleContentProvided = 4000041
    case invalidUserStatus = 4000042
    /// Deprecated by Apple (Send Consumption Information v1).
    case invalidTransactionNotConsumable = 4000043
    case invalidTransactionTypeNotSupported = 4000047
    case appTransactionIdNotSupported = 4000048
    case invalidImage = 4000161
    case headerTooLong = 4000162
    case bodyTooLong = 4000163
    case invalidLocale = 4000164
    case altTextTooLong = 4000175
    case invalidAppAccountTokenUUID = 4000183
    case familyTransactionNotSupported = 4000185
    case transactionIdNotOriginalTransactionId = 4000187
    case invalidPerformanceTestRequest = 4000211
    case invalidRequestId = 4000212
    case existingPerformanceTestRun = 4000213
    case badRequestRealtimeUrl = 4000215
    case badRequestImageSize = 4000216
    case badRequestTooManyBulletPoints = 4000218
    case badRequestBulletPointTextTooLong = 4000219
    case badRequestAboveImageRequiresAnImage = 4000224
    case subscriptionExtensionIneligible = 4030004
    case subscriptionMaxExtension = 4030005
    case familySharedSubscriptionExtensionIneligible = 4030007
    case maximumNumberOfImagesReached = 4030014
    case maximumNumberOfMessagesReached = 4030016
    case messageNotApproved = 4030017
    case imageNotApproved = 4030018
    case imageInUse = 4030019
    case forbiddenNoPassingTest = 4030026
    case accountNotFound = 4040001
    case accountNotFoundRetryable = 4040002
    case appNotFound = 4040003
    case appNotFoundRetryable = 4040004
    case originalTransactionIdNotFound = 4040005
    case originalTransactionIdNotFoundRetryable = 4040006
    case serverNotificationUrlNotFound = 4040007
    case testNotificationNotFound = 4040008
    case statusRequestNotFound = 4040009
    case transactionIdNotFound = 4040010
    case imageNotFound = 4040014
    case messageNotFound = 4040015
    case performanceTestRunNotFound = 4040018
    case appTransactionDoesNotExist = 4040019
    case defaultMessageNotFound = 4040020
    case realtimeUrlNotFound = 4040021
    case imageAlreadyExists = 4090000
    case messageAlreadyExists = 4090001
    case rateLimitExceeded = 4290000
    case generalInternal = 5000000
    case generalInternalRetryable = 5000001

    /// The HTTP status Apple answers this code with.
    public var httpStatus: Int {
        rawValue / 10_000
    }

    /// Apple's `errorMessage` where known, else the code's documented meaning.
    public var message: String {
        switch self {
        case .generalBadRequest: "Bad request."
        case .invalidAppIdentifier: "Invalid request app identifier."
        case .invalidRequestRevision: "Invalid request revision."
        case .invalidTransactionId: "Invalid transaction id."
        case .invalidOriginalTransactionId: "Invalid original transaction id."
        case .invalidExtendByDays: "An invalid extend-by-days value."
        case .invalidExtendReasonCode: "An invalid reason code."
        case .invalidRequestIdentifier: "An invalid request identifier."
        case .startDateTooFarInPast: "The start date is earlier than the earliest allowed date."
        case .startDateAfterEndDate: "Invalid request. The end date precedes the start date or the dates are the same."
        case .invalidPaginationToken: "Invalid pagination token."
        case .invalidStartDate: "Invalid request. The start date is not a timestamp value represented in milliseconds."
        case .invalidEndDate: "Invalid request. The end date is not a timestamp value represented in milliseconds."
        case .paginationTokenExpired: "Invalid request. The pagination token is expired."
        case .invalidNotificationType: "The notification type or subtype is invalid."
        case .multipleFiltersSupplied:
            "Invalid request. Supply either a transaction id or a notification type, but not both."
        case .invalidTestNotificationToken: "The test notification token is invalid."
        case .invalidSort: "An invalid sort parameter."
        case .invalidProductType: "An invalid product type parameter."
        case .invalidProductId: "The product ID parameter is invalid."
        case .invalidSubscriptionGroupIdentifier: "An invalid subscription group identifier."
        case .invalidExcludeRevoked: "The query parameter exclude-revoked is invalid."
        case .invalidInAppOwnershipType: "An invalid in-app ownership type parameter."
        case .invalidEmptyStorefrontCountryCodeList: "A required storefront country code is empty."
        case .invalidStorefrontCountryCode: "A storefront code is invalid."
        case .invalidRevoked: "The revoked parameter contains an invalid value."
        case .invalidStatus: "The status parameter is invalid."
        case .invalidAccountTenure: "The value of the account tenure field is invalid."
        case .invalidAppAccountToken: "The value of the app account token field is invalid."
        case .invalidConsumptionStatus: "The value of the consumption status field is invalid."
        case .invalidCustomerConsented:
            "The customer consented field is invalid or doesn't indicate that the customer consented."
        case .invalidDeliveryStatus: "The value in the delivery status field is invalid."
        case .invalidLifetimeDollarsPurchased: "The value in the lifetime dollars purchased field is invalid."
        case .invalidLifetimeDollarsRefunded: "The value in the lifetime dollars refunded field is invalid."
        case .invalidPlatform: "The value in the platform field is invalid."
        case .invalidPlayTime: "The value in the playtime field is invalid."
        case .invalidSampleContentProvided: "The value in the sample content provided field is invalid."
        case .invalidUserStatus: "The value in the user status field is invalid."
        case .invalidTransactionNotConsumable:
            "The transaction identifier doesn't represent a consumable in-app purchase."
        case .invalidTransactionTypeNotSupported:
            "The transaction identifier represents an unsupported in-app purchase type."
        case .appTransactionIdNotSupported: "The endpoint doesn't support an app transaction ID."
        case .invalidImage: "The image that's uploading is invalid."
        case .headerTooLong: "The header text is too long."
        case .bodyTooLong: "The body text is too long."
        case .invalidLocale: "The locale is invalid."
        case .altTextTooLong: "The alternative text for an image is too long."
        case .invalidAppAccountTokenUUID: "Invalid request. The app account token field must be a valid UUID."
        case .familyTransactionNotSupported:
            "Invalid request. Family Sharing transactions aren't supported by this endpoint."
        case .transactionIdNotOriginalTransactionId:
            "Invalid request. The transaction ID provided is not an original transaction ID."
        case .invalidPerformanceTestRequest: "The performance test request is invalid."
        case .invalidRequestId: "The request ID is invalid."
        case .existingPerformanceTestRun: "An error with an existing test."
        case .badRequestRealtimeUrl: "The URL is invalid."
        case .badRequestImageSize: "The image size provided is invalid."
        case .badRequestTooManyBulletPoints: "There are too many bullet points."
        case .badRequestBulletPointTextTooLong: "The text for a bullet point is too long."
        case .badRequestAboveImageRequiresAnImage:
            "No image object is included, but the request indicates that the header should be placed above the image."
        case .subscriptionExtensionIneligible:
            "The subscription doesn't qualify for a renewal-date extension due to its subscription state."
        case .subscriptionMaxExtension:
            "The subscription has already received the maximum renewal-date extensions."
        case .familySharedSubscriptionExtensionIneligible:
            "The subscription is the customer's through Family Sharing, so not directly eligible for an extension."
        case .maximumNumberOfImagesReached: "The maximum number of uploaded images is reached."
        case .maximumNumberOfMessagesReached: "The maximum number of uploaded messages is reached."
        case .messageNotApproved:
            "The message isn't in the approved state, so you can't configure it as a default message."
        case .imageNotApproved:
            "The image isn't in the approved state, so you can't configure it as part of a default message."
        case .imageInUse: "The image is currently in use as part of a message, so you can't delete it."
        case .forbiddenNoPassingTest:
            "Passing a performance test is required before you can set a URL for the production environment."
        case .accountNotFound: "Account not found."
        case .accountNotFoundRetryable: "Account not found. Please try again."
        case .appNotFound: "App not found."
        case .appNotFoundRetryable: "App not found. Please try again."
        case .originalTransactionIdNotFound: "Original transaction id not found."
        case .originalTransactionIdNotFoundRetryable: "Original transaction id not found. Please try again."
        case .serverNotificationUrlNotFound:
            "The App Store server couldn't find a notifications URL for your app in this environment."
        case .testNotificationNotFound:
            "The test notification token is expired or the test notification status isn't available."
        case .statusRequestNotFound:
            "No renewal-date extension request has this request identifier and product identifier."
        case .transactionIdNotFound: "Transaction id not found."
        case .imageNotFound: "The system can't find the image identifier."
        case .messageNotFound: "The system can't find the message identifier."
        case .performanceTestRunNotFound: "The service can't find the specified test run."
        case .appTransactionDoesNotExist: "An app transaction doesn't exist for the specified customer."
        case .defaultMessageNotFound: "A default message isn't configured."
        case .realtimeUrlNotFound: "The URL for your endpoint isn't configured."
        case .imageAlreadyExists: "The image identifier already exists."
        case .messageAlreadyExists: "The message identifier already exists."
        case .rateLimitExceeded: "Rate limit exceeded."
        case .generalInternal: "An unknown error occurred."
        case .generalInternalRetryable: "An unknown error occurred. Please try again."
        }
    }

    /// Codes of Apple's Retention Messaging API (messages, images, performance tests), which this service never calls;
    /// known so that an answer carrying one is named, not guessed from its HTTP status.
    public var isRetentionMessaging: Bool {
        switch self {
        case .invalidImage, .headerTooLong, .bodyTooLong, .invalidLocale, .altTextTooLong,
            .invalidPerformanceTestRequest, .invalidRequestId, .existingPerformanceTestRun,
            .badRequestRealtimeUrl, .badRequestImageSize, .badRequestTooManyBulletPoints,
            .badRequestBulletPointTextTooLong, .badRequestAboveImageRequiresAnImage,
            .maximumNumberOfImagesReached, .maximumNumberOfMessagesReached, .messageNotApproved,
            .imageNotApproved, .imageInUse, .forbiddenNoPassingTest, .imageNotFound, .messageNotFound,
            .performanceTestRunNotFound, .defaultMessageNotFound, .realtimeUrlNotFound, .imageAlreadyExists,
            .messageAlreadyExists:
            true
        default:
            false
        }
    }

    /// The error body Apple sends for this code.
    public var payload: ServerAPIErrorPayload {
        ServerAPIErrorPayload(errorCode: rawValue, errorMessage: message)
    }
}

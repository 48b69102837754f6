import AppStoreModel

extension ServerAPIErrorCode {
    /// What this code means for the request that got it: the retry rule of every code Apple's library knows, decided
    /// here once (the switch has no default, so a code added to the model must be given its rule). docs/storekit.md,
    /// "Apple's error codes", lists the same table; a test holds the two together.
    ///
    /// - `notFound`: this environment does not know the id (a lookup with no environment pinned then asks the sandbox).
    /// - `notFoundRetryable`: not found, "try again": retried, never a verdict of not found.
    /// - `appNotFound`: the environment does not know the app (a new app exists in the sandbox only).
    /// - `retryable`: Apple's fault or a rate limit (4290000 also holds the pacer for Retry-After), or a revision or
    ///   pagination token Apple no longer takes (the next attempt starts again from the first page).
    /// - `configuration`: ours to fix (the bundle id, App Store Connect's notification URL); costs no attempt.
    /// - `rejected`: the request itself is wrong or the purchase is not eligible: asking again will not help.
    public var errorClass: ServerAPIClient.ErrorClass {
        switch self {
        case .accountNotFound, .originalTransactionIdNotFound, .transactionIdNotFound, .appTransactionDoesNotExist,
            .testNotificationNotFound, .statusRequestNotFound, .imageNotFound, .messageNotFound,
            .performanceTestRunNotFound, .defaultMessageNotFound:
            .notFound
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable:
            .notFoundRetryable
        case .appNotFound:
            .appNotFound
        case .invalidAppIdentifier, .serverNotificationUrlNotFound, .realtimeUrlNotFound, .forbiddenNoPassingTest:
            .configuration
        case .invalidRequestRevision, .invalidPaginationToken, .paginationTokenExpired:
            .retryable
        case .rateLimitExceeded, .generalInternal, .generalInternalRetryable:
            .retryable
        case .generalBadRequest, .invalidTransactionId, .invalidOriginalTransactionId, .invalidExtendByDays,
            .invalidExtendReasonCode, .invalidRequestIdentifier, .startDateTooFarInPast, .startDateAfterEndDate,
            .invalidStartDate, .invalidEndDate, .invalidNotificationType, .multipleFiltersSupplied,
            .invalidTestNotificationToken, .invalidSort, .invalidProductType, .invalidProductId,
            .invalidSubscriptionGroupIdentifier, .invalidExcludeRevoked, .invalidInAppOwnershipType,
            .invalidEmptyStorefrontCountryCodeList, .invalidStorefrontCountryCode, .invalidRevoked, .invalidStatus,
            .invalidAccountTenure, .invalidAppAccountToken, .invalidConsumptionStatus, .invalidCustomerConsented,
            .invalidDeliveryStatus, .invalidLifetimeDollarsPurchased, .invalidLifetimeDollarsRefunded,
            .invalidPlatform, .invalidPlayTime, .invalidSampleContentProvided, .invalidUserStatus,
            .invalidTransactionNotConsumable, .invalidTransactionTypeNotSupported, .appTransactionIdNotSupported,
            .invalidAppAccountTokenUUID, .familyTransactionNotSupported, .transactionIdNotOriginalTransactionId:
            .rejected
        case .subscriptionExtensionIneligible, .subscriptionMaxExtension, .familySharedSubscriptionExtensionIneligible:
            .rejected
        case .invalidImage, .headerTooLong, .bodyTooLong, .invalidLocale, .altTextTooLong,
            .invalidPerformanceTestRequest, .invalidRequestId, .existingPerformanceTestRun, .badRequestRealtimeUrl,
            .badRequestImageSize, .badRequestTooManyBulletPoints, .badRequestBulletPointTextTooLong,
            .badRequestAboveImageRequiresAnImage, .maximumNumberOfImagesReached, .maximumNumberOfMessagesReached,
            .messageNotApproved, .imageNotApproved, .imageInUse, .imageAlreadyExists, .messageAlreadyExists:
            .rejected
        }
    }
}

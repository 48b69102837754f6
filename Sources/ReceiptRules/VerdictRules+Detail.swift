extension VerdictRules {
    /// The detail strings of rejections and retries. They end up in `receipt_jobs.last_error` and `result` for
    /// operators: short, ids and UTC times only, never receipt data or secrets. Lists name at most `listLimit` items.
    enum Detail {
        static let listLimit = 3

        static func sandboxNotAllowed(_ policy: SandboxPolicy, _ order: OrderContext) -> String {
            switch policy {
            case .allowlist: "sandbox receipt for user \(order.userId), who is not in SANDBOX_ALLOWED_USERS"
            case .reject, .accept: "sandbox receipt, and SANDBOX_POLICY=reject"
            }
        }

        static func bundleMismatch(_ receiptBundleId: String?, _ orderBundleId: String) -> String {
            guard let receiptBundleId else {
                return "receipt names no bundle id (or its transactions name more than one); "
                    + "the order is for \(orderBundleId)"
            }
            if receiptBundleId != orderBundleId {
                return "receipt is for \(receiptBundleId), the order for \(orderBundleId)"
            }
            return "receipt and order are for \(receiptBundleId), which is not in APPLE_BUNDLE_IDS"
        }

        static func noPurchasesYet(_ attempt: Int, _ lastAttempt: Int) -> String {
            "receipt lists no purchases yet (attempt \(attempt); Apple's copy can lag, retried until attempt \(lastAttempt))"
        }

        static func noPurchases(_ attempt: Int) -> String {
            "receipt lists no purchases (attempt \(attempt))"
        }

        static func clientTransactionNotFound(_ transactionId: String, _ purchases: [Purchase]) -> String {
            "transaction \(transactionId) is not in the receipt; it has \(list(purchases.map(\.transactionId)))"
        }

        static func clientTransactionProduct(_ purchase: Purchase, _ orderProductId: String) -> String {
            "transaction \(purchase.transactionId) bought \(purchase.productId), the order sold \(orderProductId)"
        }

        static func accountMismatch(_ purchases: [Purchase], _ order: OrderContext) -> String {
            "the order expects appAccountToken \(order.appAccountToken ?? "-"); "
                + "\(list(purchases.map { "\($0.transactionId) carries \($0.appAccountToken ?? "-")" }))"
        }

        static func familyShared(_ purchases: [Purchase]) -> String {
            "shared through Family Sharing (FAMILY_SHARED), and FAMILY_SHARING=reject: "
                + list(purchases.map(\.transactionId))
        }

        static func productNotInReceipt(_ productId: String, _ purchases: [Purchase]) -> String {
            var products: [String] = []
            for purchase in purchases where !products.contains(purchase.productId) {
                products.append(purchase.productId)
            }
            return "receipt has no purchase of \(productId); it has \(list(products))"
        }

        static func noPurchaseSinceOrder(_ productId: String, earliestMs: Int64, _ older: [Purchase]) -> String {
            let newest = older.first.map { " (newest: \($0.transactionId) at \(time($0.purchaseDateMs)))" } ?? ""
            return "no purchase of \(productId) since \(time(earliestMs)), the order time minus slack\(newest)"
        }

        static func refunded(_ purchases: [Purchase]) -> String {
            let items = purchases.map { purchase in
                let reason = purchase.cancellationReason.map { ", reason \($0)" } ?? ""
                return "\(purchase.transactionId) (cancelled \(time(purchase.cancellationDateMs))\(reason))"
            }
            return "refunded: \(list(items))"
        }

        static func expired(_ purchases: [Purchase], orderTimeMs: Int64) -> String {
            let items = purchases.map { "\($0.transactionId) (expired \(time($0.expiresDateMs)))" }
            return "expired by the order time \(time(orderTimeMs)): \(list(items))"
        }

        /// "a, b, c and 2 more".
        static func list(_ items: [String]) -> String {
            let shown = items.prefix(listLimit).joined(separator: ", ")
            return items.count > listLimit ? "\(shown) and \(items.count - listLimit) more" : shown
        }

        /// Milliseconds since 1970 as UTC ISO 8601 (`2020-07-22T17:39:06Z`, with `.SSS` only when not zero).
        /// Written out here because the rules do not depend on Foundation.
        static func time(_ ms: Int64?) -> String {
            guard let ms else { return "unknown time" }
            let (seconds, millis) = floorDivMod(ms, 1000)
            let (days, secondOfDay) = floorDivMod(seconds, 86_400)
            // Howard Hinnant's civil_from_days: days since 1970-01-01 to a proleptic Gregorian date.
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let shiftedMonth = (5 * dayOfYear + 2) / 153
            let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
            let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
            let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

            let date = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
            let clock = "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
            return "\(date)T\(clock)\(millis == 0 ? "" : "." + pad(millis, 3))Z"
        }

        private static func floorDivMod(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
            let remainder = value % divisor
            return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
        }

        private static func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
            return value < 0 ? "-" + padded : padded
        }
    }
}

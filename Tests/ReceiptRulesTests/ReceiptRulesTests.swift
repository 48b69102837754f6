// Tests for ReceiptRulesTests.

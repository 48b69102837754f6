// Module ReceiptQueue.

print("receipt-worker")

print("apns-sandbox")

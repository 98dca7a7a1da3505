"""A tiny push backend, as a team's code would look: the thing the recipes in docs/testing.md test.

It sends alerts over HTTP/2 with httpx, deletes a device token that APNs answers 410 for, and retries 429, 500 and
503 with a short backoff. Configuration comes from the environment (what a test points at the sandbox):

    APNS_URL     the provider endpoint, e.g. http://127.0.0.1:2196 (h2c) or https://localhost:2197
    APNS_CA      the CA to trust for https (the sandbox's ca.pem)
    APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID, APNS_TOPIC   the provider token's key and the app
"""

from __future__ import annotations

import json
import os
import ssl
import time

import httpx
import jwt


class Backend:
    def __init__(self, now=time.time) -> None:
        self.url = os.environ["APNS_URL"]
        verify = ssl.create_default_context(cafile=os.environ["APNS_CA"]) if os.environ.get("APNS_CA") else True
        self.client = httpx.Client(http1=False, http2=True, verify=verify, timeout=10)
        with open(os.environ["APNS_KEY_FILE"]) as f:
            self.key = f.read()
        self.key_id, self.team_id, self.topic = os.environ["APNS_KEY_ID"], os.environ["APNS_TEAM_ID"], os.environ["APNS_TOPIC"]
        self.now = now  # where `iat` comes from: a test on the sandbox's virtual clock passes its time
        self.tokens: set[str] = set()
        self.retries = 0

    def provider_token(self) -> str:
        return jwt.encode({"iss": self.team_id, "iat": int(self.now())}, self.key, algorithm="ES256",
                          headers={"kid": self.key_id})

    def send(self, device: str, alert: str, expiration: int | None = None, attempts: int = 4) -> httpx.Response:
        headers = {"authorization": f"bearer {self.provider_token()}", "apns-topic": self.topic, "apns-push-type": "alert"}
        if expiration is not None:
            headers["apns-expiration"] = str(expiration)
        body = json.dumps({"aps": {"alert": alert}})
        for attempt in range(attempts):
            response = self.client.post(f"{self.url}/3/device/{device}", headers=headers, content=body)
            if response.status_code == 410:
                self.tokens.discard(device)  # Unregistered: never push to this token again
            if response.status_code not in (429, 500, 503) or attempt == attempts - 1:
                return response
            self.retries += 1
            time.sleep(0.05 * 2 ** attempt)
        return response

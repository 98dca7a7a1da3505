"""A push backend's sender as it runs in production: aioapns with its default host and port.

Nothing here knows about APNs Sandbox. `use_sandbox=True` makes aioapns connect to Apple's development server
(api.development.push.apple.com; other clients use api.sandbox.push.apple.com) on port 443. In Docker Compose both
names are aliases of the sandbox's container (docker-compose.yml), which answers on 443 with a certificate for
Apple's names signed by its own CA. The only change to the backend's environment is that CA in its trust store: here
SSL_CERT_FILE (Python's ssl.create_default_context(), which aioapns uses, reads it).

    APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID   the provider token's key (the .p8 from Apple, or the sandbox's)
    APNS_TOPIC                                 the app's bundle id
    DEVICE_TOKEN                               where to push (default: a fixed test token; the sandbox
                                               registers unknown tokens on their first push)
    ALERT                                      the alert text (default "Hello from the backend")

Prints one JSON line {"apnsId", "status", "reason"} and exits 0 when APNs answered 200, 1 otherwise.
"""

import asyncio
import json
import os
import sys
import uuid

from aioapns import APNs, NotificationRequest, PushType


async def main() -> int:
    with open(os.environ["APNS_KEY_FILE"]) as file:
        key = file.read()
    client = APNs(key=key, key_id=os.environ["APNS_KEY_ID"], team_id=os.environ["APNS_TEAM_ID"],
                  topic=os.environ["APNS_TOPIC"], use_sandbox=True)
    request = NotificationRequest(
        device_token=os.environ.get("DEVICE_TOKEN", "a1" * 32),
        message={"aps": {"alert": {"title": "Backend", "body": os.environ.get("ALERT", "Hello from the backend")}}},
        notification_id=str(uuid.uuid4()),
        push_type=PushType.ALERT,
    )
    result = await client.send_notification(request)
    print(json.dumps({"apnsId": result.notification_id, "status": result.status, "reason": result.description}),
          flush=True)
    return 0 if result.is_successful else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""One app's whole flow with the official Dropbox Python SDK, unchanged, for
tests/e2e/dropbox-python.test.mjs: authorization URL, the code exchange (redirect or no-redirect
flow), users_get_current_account, refresh, users_get_current_account, auth_token_revoke, the 401
after revoke and the refresh after revoke.

The test plays the user's browser; this script plays the app. They talk in JSON lines: the script
writes one object per line on stdout, the test answers on stdin when asked.

  out {"event": "authorize_url", "url": ...}          the app sends the user there
  in  {"redirect": "<the redirect URL the app got>"}   (redirect flow)
  in  {"code": "<the code the user copied>"}           (no-redirect flow)
  out {"step": <name>, "ok": true, ...} or {"step": <name>, "ok": false, "error": {...}}, one a step
  out {"event": "done"}

argv[1]: {"app_key", "app_secret" (null for PKCE), "pkce", "scopes" (null: the app's),
"redirect_uri" (null: the no-redirect flow), "ca_certs" (the PEM the SDK's ca_certs option trusts)}

The SDK is pointed at the local host by its own settings only: DROPBOX_API_HOST and
DROPBOX_WEB_HOST in the environment (read by dropbox/session.py at import, before any of this
runs) and the constructors' ca_certs option; see the test's header comment.
"""

import json
import sys
import traceback
from datetime import datetime, timedelta

import dropbox
from dropbox import stone_serializers, users
from dropbox.exceptions import ApiError, AuthError, BadInputError, HttpError
from dropbox.oauth import DropboxOAuth2Flow, DropboxOAuth2FlowNoRedirect


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def ask():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("the test closed stdin")
    return json.loads(line)


def describe(error):
    """An exception as plain values, with what the SDK's own error types carry."""
    info = {"type": type(error).__name__, "repr": repr(error)}
    if isinstance(error, AuthError):
        info["tag"] = error.error._tag
    if isinstance(error, ApiError):
        info["error"] = repr(error.error)
    if isinstance(error, (BadInputError, HttpError)):
        info["message"] = getattr(error, "message", None) or getattr(error, "body", None)
    status = getattr(getattr(error, "response", None), "status_code", None)
    if status is not None:
        info["status"] = status
    info["traceback"] = traceback.format_exc()
    return info


def step(name, fn):
    """Runs one step; reports its result or its error. Returns the result, or None."""
    try:
        value = fn()
    except Exception as error:  # reported to the test, which fails the step
        out({"step": name, "ok": False, "error": describe(error)})
        return None
    out({"step": name, "ok": True, **(value[1] if isinstance(value, tuple) else {})})
    return value[0] if isinstance(value, tuple) else value


def expect_error(name, fn):
    """Runs one step that must raise; reports the error (ok) or the value it returned (not ok)."""
    try:
        value = fn()
    except Exception as error:
        out({"step": name, "ok": True, "error": describe(error)})
        return
    out({"step": name, "ok": False, "returned": repr(value)})


def main():
    args = json.loads(sys.argv[1])
    common = dict(
        consumer_secret=args["app_secret"],
        token_access_type="offline",
        scope=args["scopes"],
        use_pkce=args["pkce"],
        ca_certs=args["ca_certs"],
    )
    redirect_uri = args["redirect_uri"]
    web_session = {}  # the app's own session store (a dict, as the SDK's docs allow)
    if redirect_uri is not None:
        flow = DropboxOAuth2Flow(
            args["app_key"], redirect_uri, web_session, "dropbox-auth-csrf-token", **common
        )
        url = flow.start(url_state="python-sdk")
    else:
        flow = DropboxOAuth2FlowNoRedirect(args["app_key"], **common)
        url = flow.start()
    out({"event": "authorize_url", "url": url, "code_verifier": flow.code_verifier})

    answer = ask()

    def finish():
        if redirect_uri is not None:
            from urllib.parse import parse_qsl, urlsplit

            query = dict(parse_qsl(urlsplit(answer["redirect"]).query))
            result = flow.finish(query)
        else:
            result = flow.finish(answer["code"])
        return result, {
            "result": {
                "access_token": result.access_token,
                "account_id": result.account_id,
                "user_id": result.user_id,
                "refresh_token": result.refresh_token,
                "expires_at": result.expires_at.isoformat() if result.expires_at else None,
                "scope": result.scope,
                "url_state": getattr(result, "url_state", None),
            }
        }

    result = step("finish", finish)
    if result is None:
        out({"event": "done"})
        return

    # What an app keeps from the exchange, handed to the client's constructor.
    dbx = dropbox.Dropbox(
        oauth2_access_token=result.access_token,
        oauth2_refresh_token=result.refresh_token,
        oauth2_access_token_expiration=result.expires_at,
        app_key=args["app_key"],
        app_secret=args["app_secret"],
        ca_certs=args["ca_certs"],
    )

    def current_account(client):
        def call():
            account = client.users_get_current_account()
            # The result passed the SDK's own validators (FullAccount); this is it again as JSON.
            encoded = stone_serializers.json_compat_obj_encode(users.FullAccount_validator, account)
            return account, {"account": encoded}

        return call

    step("users_get_current_account", current_account(dbx))

    # The access token expires (as the app's stored expiry says): the SDK's next call refreshes
    # first (check_and_refresh_access_token), then calls with the new token. clone() is the SDK's
    # way to a client with other settings.
    expired = dbx.clone(oauth2_access_token_expiration=datetime.utcnow() - timedelta(seconds=1))
    step("refresh on expiry, then users_get_current_account", current_account(expired))

    step("auth_token_revoke", lambda: expired.auth_token_revoke())
    expect_error("users_get_current_account after revoke", current_account(expired))
    expect_error("refresh_access_token after revoke", lambda: expired.refresh_access_token())
    out({"event": "done"})


if __name__ == "__main__":
    main()

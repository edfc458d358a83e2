"""What a refused LTI launch's page says: a sentence for the person who launched, from
pylti1p3's reason or the service's own (lti/launch.py's checks), never a traceback.

Each reason the library or the service gives has its sentence: the state or the nonce (a
launch used twice, a login this browser did not begin), the issuer, the audience or ``azp``,
the deployment, the signing key and algorithm (read from the token's unchecked header, a name
at most), an expired launch, a launch signed in the future by this machine's clock (clock
skew, named so), a launch without ``exp``, a message type other than a resource link's (Deep
Linking and Submission Review named), the version, a launch from another course than the
service's (lti/store.py's sentence) or before any course is bound.
"""

from __future__ import annotations

import json
import re

from pylti1p3.message_launch import MessageLaunch

START_AGAIN = "Start again from the assignment in your course's page in the LMS."
MESSAGE_TYPE, RESOURCE_LINK = "https://purl.imsglobal.org/spec/lti/claim/message_type", "LtiResourceLinkRequest"
OTHER_MESSAGES = {"LtiDeepLinkingRequest": "a Deep Linking request (choosing content to add to the course)",
                  "LtiSubmissionReviewRequest": "a Submission Review request (reviewing a student's submission)"}
NOT_BOUND = ("This service does not serve a course yet: its instructor opens it once from the course in the LMS, "
             "which binds it to that course. Ask your instructor to, then start again from the assignment.")


def refusal_sentence(problem: Exception, header: dict) -> str:
    """What a refused launch's page says, from pylti1p3's reason."""
    text = str(problem)
    alg = re.sub(r"[^A-Za-z0-9]", "", str(header.get("alg", "")))[:12]  # the unchecked header's: a name at most
    pairs = [
        (("State not found", "Missing state"), "This launch does not belong to a sign-in this browser began here "
                                               "(its state does not match, or it was used already). " + START_AGAIN),
        (("Invalid Nonce", '"nonce" is empty'), "This launch was used already (its nonce was seen before): each "
                                                "launch works once. " + START_AGAIN),
        (("[client_id=",), "This launch was made for another tool (its audience is not this service's client id)."),
        (("Registration not found", "Could not find issuer", "not found in settings"),
         "This launch comes from a platform this service is not registered with (its issuer is not the course's)."),
        (("Client id not registered", "azp is not"), "This launch was made for another tool (its audience is not "
                                                     "this service's client id)."),
        (("Unable to find deployment",), "This launch comes from a deployment of the tool this course does not "
                                         "know (its deployment id is not the course's)."),
        (("Unable to find public key",), f"This launch is signed with {alg}, which this service never accepts: "
                                         "only the LMS's own RSA keys are." if not alg.startswith("RS") else
                                         "This launch names a signing key the LMS's key set does not have (an "
                                         "unknown key id), as the key set was read at most a minute ago."),
        (("Error during fetch URL", "Key set not read again", "Invalid response from"),
         "The LMS's key set could not be read (it did not answer in time, or not as a key set), so this launch "
         "cannot be checked now; it is read again at most once a minute. Start again from the assignment in a "
         "minute."),
        (("expired",), "This launch has expired: it was made too long ago. " + START_AGAIN),
        (("not yet valid",), "This launch was signed at a time still to come by this machine's clock (its iat is in "
                             "the future): the LMS's clock and this service's disagree (clock skew). The service's "
                             "administrator can set this machine's clock right (NTP); then start again from the "
                             "assignment in your course's page in the LMS."),
        (("No exp claim",), "This launch has no expiry time (its exp claim is missing), which every LTI 1.3 launch "
                            "must have, so it is not taken."),
        (tuple(f"Message type not taken: {kind}" for kind in OTHER_MESSAGES),
         f"This launch is {OTHER_MESSAGES.get(text.rpartition(' ')[2], '')}, which this service does not offer: it "
         "takes links to the assignment only (LtiResourceLinkRequest). Open the assignment itself from the course."),
        (("Signature verification failed", "Can't decode id_token"), "This launch's signature does not match its "
                                                                     "content: it was changed after the LMS signed "
                                                                     "it, so it is not taken."),
        (("version",), "This launch is not LTI 1.3.0 (its version claim says otherwise)."),
        (("Message type not taken", "message type", "Message validation", "Resource Link", "Must have a user",
          "Roles Claim"),
         "This launch is not a link to a resource this service understands (its message type or claims are not "
         "an LTI resource link launch's)."),
        (("Missing id_token", "JWT"), "No valid launch token arrived with this request. " + START_AGAIN),
    ]
    for keys, sentence in pairs:
        if any(key in text for key in keys):
            return sentence
    return f"This launch could not be checked ({text[:200]}). " + START_AGAIN


def header_of(token: str) -> dict:
    """A token's header, unchecked: only to say which algorithm a refused launch named."""
    try:
        return json.loads(MessageLaunch.urlsafe_b64decode(token.split(".")[0]))
    except (ValueError, UnicodeDecodeError, IndexError):
        return {}

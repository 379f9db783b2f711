"""LTI 1.3 on the service: an LMS (Canvas, Moodle, any LTI 1.3 platform) registers the service as a
tool.

pylti1p3next (the maintained fork of pylti1p3) does the protocol: the OIDC login, the launch's
verification (the platform's signature from its JWKS, the nonce, the issuer, client and deployment),
deep linking's signed answer, and the service calls (AGS scores, NRPS members). This package adapts
it to Starlette and to the service's database, and does what is the service's own:

    tool.py      the platforms registered (pylti1p3's JSON file) and the tool's key pair
    adapter.py   pylti1p3 on Starlette: the request, cookies, redirects, login and launch classes
    storage.py   what a sign-in keeps between its steps, in the database; a nonce is good once
    identity.py  the launch's user -> the roster entry; NRPS members -> roster rows
    scores.py    the counted attempt's score posted to the LMS gradebook (AGS), retried until it
                 lands
    refusals.py  why a launch was refused, said for a person
    nonces.py    the OIDC nonce, signed with its expiry instead of stored
    routes.py    the routes an LMS calls (/lti/...), built on all of the above

The guide is docs/LTI.md.
"""

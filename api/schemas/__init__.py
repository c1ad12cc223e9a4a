"""Marshmallow schemas: request validation and the OpenAPI 3.1 document come from the same code.

One module per resource (``api/resources/<name>.py`` reads ``api/schemas/<name>.py``); import a
name from the module that defines it, this package re-exports nothing. The class names are the
document's component names (``VideoCreateSchema`` is ``VideoCreate``): keep them.

==============  ==============================================================================
``common``      the request base (unstorable and loosely typed JSON refused), the empty-PATCH
                rule, ``VideoDocField``, the error envelope, the website-address message
``brand_kits``  brand tokens, the brand kit, its list and PATCH; the brand-extraction body
``stories``     the built-in stories as listed
``jobs``        job statuses (a render's too), kinds and their results; the Job
``videos``      videos and versions: read, list (and its page query), create, PATCH, restore
``locales``     the translation locales and their query
``renders``     renders, stills and variants: the Render and the bodies that ask for each
``comments``    comments on a video
``webhooks``    webhook endpoints, their create and PATCH bodies, and their deliveries
``me``          the calling key's workspace, rate-limit policy and key reference
``system``      health
``assets``      the media library: the Asset, its list and page query, the upload body
``usage``       what a workspace's renders used and cost over a period, and its query
==============  ==============================================================================
"""

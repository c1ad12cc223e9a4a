"""GET /stories: the built-in stories and their field schemas."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.docs import errors
from reelfarm.api.schemas.stories import StoryListSchema
from reelfarm.studio.stories import list_stories

blp = Blueprint("stories", __name__, url_prefix="/api/v1/stories", description="Built-in stories")


@blp.route("")
class Stories(MethodView):
    @blp.response(200, StoryListSchema, example=ex.RESPONSES["StoryList"])
    @blp.doc(operationId="listStories")
    @errors(blp)
    def get(self):
        """List stories

        Every built-in story with its typed fields as a JSON Schema (2020-12) object, the optional
        `soundtrack` (an uploaded sound) among them.
        """
        return {"data": [_resource(s.to_dict()) for s in list_stories()]}


def _resource(story: dict) -> dict:
    """``Story.to_dict()`` for the schema, whose ``fields`` attribute is ``fields_``."""
    story["fields_"] = story.pop("fields")
    return story

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

        Every built-in story with its typed fields as a JSON Schema (2020-12) object.
        """
        return {"data": [dict(s.to_dict(), fields_=s.fields) for s in list_stories()]}

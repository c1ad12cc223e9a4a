"""GET /stories and GET /stories/{id}: the built-in stories and their field schemas."""
from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.docs import errors
from reelfarm.api.errors import NotFoundError
from reelfarm.api.schemas.stories import StoryListSchema, StorySchema
from reelfarm.studio.errors import UnknownStoryError
from reelfarm.studio.stories import get_story, list_stories

blp = Blueprint("stories", __name__, url_prefix="/api/v1/stories", description="Built-in stories")


@blp.route("")
class Stories(MethodView):
    @blp.response(200, StoryListSchema, example=ex.RESPONSES["StoryList"])
    @blp.doc(operationId="listStories")
    @errors(blp)
    def get(self):
        """List stories

        Every built-in story with its typed fields as a JSON Schema (2020-12) object, the optional
        `soundtrack` (an uploaded sound) among them: its `fit` says what a sound shorter than the
        video does, `loop` (the default: repeated to the end) or `once` (played once, the rest silent,
        and the version's lint warns `sound_ends_early`); a longer sound fades out over the video's
        last second. A text field's default is a sample ("Aurora Lamp"): a video made with one left
        as it is has a `sample_value` warning per such field on its version's `lint`. An image
        field takes an https address or the id of an uploaded image; a video field (`product_launch`'s `clip`, `testimonial`'s `clip`,
        `announcement`'s `background_video`) the id of an uploaded video of the workspace, never an
        address; another workspace's id, or an upload of another kind, gives 400 `unknown_asset`.
        """
        return {"data": [_resource(s.to_dict()) for s in list_stories()]}


@blp.route("/<string(maxlength=100):story_id>")
class Story(MethodView):
    @blp.response(200, StorySchema, example=ex.RESPONSES["StoryList"]["data"][0])
    @blp.doc(operationId="getStory")
    @errors(blp, 404)
    def get(self, story_id: str):
        """Get a story

        One built-in story by its `id` (as `GET /stories` lists it), with its fields' JSON Schema;
        an id no story has is 404 `not_found`.
        """
        try:
            story = get_story(story_id)
        except UnknownStoryError:
            raise NotFoundError(f"No story {story_id!r}; GET /api/v1/stories lists them.") from None
        return _resource(story.to_dict())


def _resource(story: dict) -> dict:
    """``Story.to_dict()`` for the schema, whose ``fields`` attribute is ``fields_``."""
    story["fields_"] = story.pop("fields")
    return story

"""The floor's web console: pages rendered on the server, kept live by Server-Sent Events.

Pages (each needs a login; without one the browser is sent to ``/login``): the floor map ``/``,
the holds queue ``/holds``, a table ``/tables/{table}``, hands ``/hands`` and a hand's timeline
``/hands/{hand_id}``, alarms ``/alarms``. Each page names its stream, ``/api/live/{page}``: the
stream waits for the pit to learn something (:class:`controller.pit.live.LiveBoard`) and sends
the page's sections that changed, as HTML to put in place (:mod:`.sections` reads them,
:mod:`.streams` sends them: computed once for every stream of a page, paced, bounded); the small
script in ``static/console.js`` does that, keeps ages ticking and sends the rulings. No build
step and nothing from another site: the templates, the script and the style ship in this
package. This package renders; the routes are the web app's (:mod:`controller.pit.web.pages`,
:mod:`controller.pit.web.live`).

A section that cannot be rendered from what the store holds (data of a shape nobody foresaw)
is shown as a "malformed" marker in its place (a tile names its table), never as a failed page.

Every page carries the pit's own health (:mod:`controller.pit.health`, what ``/healthz``
answers from): a banner naming the broker or the store lost and since when, and a live
indicator that says live only when nothing is lost. Without the store no page can be read: a
page asked for then is a 503 page naming it (:func:`.render.render_unavailable`).
"""

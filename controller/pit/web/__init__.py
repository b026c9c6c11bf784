"""The pit's web app (:func:`.app.create_app`): one router per area over the dependencies they
share (:mod:`.deps`: the process's state, the user and their roles, the CSRF check): logging in
(:mod:`.auth`), the JSON API (:mod:`.api`), the console's pages (:mod:`.pages`) and their live
streams (:mod:`.live`). The routers import the dependencies, the dependencies the store, the
worker and the console's rendering (:mod:`controller.pit.console`); nothing imports back.
"""

"""Scaling out on Ray (the ``ray`` extra): corpus translation across a cluster with Ray Data, and the HTTP service
as replicas behind Ray Serve. See docs/scale.md.

Modules: :mod:`~enzh.scale.options` (what a job or a deployment can be told), :mod:`~enzh.scale.cluster`
(starting or joining Ray), :mod:`~enzh.scale.shards` (cutting a document on unit boundaries),
:mod:`~enzh.scale.store` (finished shards on disk and the resume manifest), :mod:`~enzh.scale.worker` (the
translator that each Ray Data actor runs), :mod:`~enzh.scale.corpus` (the job), :mod:`~enzh.scale.serve_app`
(the Ray Serve deployment) and :mod:`~enzh.scale.serving` (``enzh serve --ray``). Nothing here imports Ray
until it is used, except :mod:`~enzh.scale.serve_app`, which is the Ray Serve application module itself.
"""

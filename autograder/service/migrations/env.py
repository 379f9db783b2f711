"""alembic's environment for the service's schema: the engine comes from ``database.migrate``."""
from alembic import context

from autograder.service.models import Base

engine = context.config.attributes.get("engine")
if engine is None:  # alembic's own command line: the URL from ``-x db=URL``
    from autograder.service.database import make_engine

    engine = make_engine(context.get_x_argument(as_dictionary=True)["db"])

with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()

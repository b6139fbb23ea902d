"""``HighwaterDataSource``: the ``highwater`` format for ``spark.read``/``readStream``/``write``/``writeStream``.

Options are validated where Spark first hands them over: read options in
``schema()`` (which ``load()`` calls), the streaming-only rules in ``streamReader``,
sink options in ``writer``/``streamWriter`` (which ``save()``/``start()`` call). The
error names the option.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from spark_connector.arrow import schema_ddl
from spark_connector.options import parse_sink_options, parse_source_options
from spark_connector.reader import HighwaterBatchReader, HighwaterStreamReader
from spark_connector.writer import HighwaterBatchWriter, HighwaterStreamWriter, check_sink_schema


class HighwaterDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "highwater"

    def schema(self) -> str:
        return schema_ddl(parse_source_options(self.options, streaming=False).include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return HighwaterBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return HighwaterStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return HighwaterBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return HighwaterStreamWriter(options)

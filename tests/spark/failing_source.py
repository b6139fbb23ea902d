"""A ``highwater`` source whose ``read()`` fails once, mid-range, to test replay after a crash.

The first task to get past its first Arrow batch creates ``failOnceMarker`` (O_EXCL,
so exactly one task in one run fails) and raises; every later read behaves normally.
This module is shipped to the workers by value (``register_pickle_by_value``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_connector import HighwaterDataSource, RangeTask
from spark_connector.arrow import schema_ddl
from spark_connector.fetch import read_range
from spark_connector.options import parse_source_options
from spark_connector.reader import HighwaterStreamReader

MARKER_OPTION = "failOnceMarker"


class InjectedFailure(RuntimeError):
    pass


class FailingOnceReader(HighwaterStreamReader):
    def __init__(self, options, marker_path: str) -> None:
        super().__init__(options)
        self.marker_path = marker_path

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangeTask)
        for batch in read_range(partition):
            yield batch
            try:
                os.close(os.open(self.marker_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            raise InjectedFailure(f"injected failure in read() after offset {batch.column('offset')[-1]}")


class FailingOnceSource(HighwaterDataSource):
    @classmethod
    def name(cls) -> str:
        return "highwater_failing_once"

    def _source_options(self) -> dict[str, str]:
        return {key: value for key, value in self.options.items() if key.lower() != MARKER_OPTION.lower()}

    def schema(self) -> str:
        return schema_ddl(parse_source_options(self._source_options(), streaming=False).include_headers)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = parse_source_options(self._source_options(), streaming=True)
        return FailingOnceReader(options, self.options[MARKER_OPTION])

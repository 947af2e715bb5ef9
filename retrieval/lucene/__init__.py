"""Lucene through Pyserini's Anserini jar: the Java runtime and JVM (jvm), the index (index)."""

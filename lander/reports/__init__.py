"""What a person reads: self-contained HTML pages of a run and of a comparison, their Plotly figures, PNG plots,
``report.md``, and ``compare()`` that writes a comparison's files."""

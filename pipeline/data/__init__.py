"""The data model below collection and analysis: the tables' schema and how they are stored
(``schema``), the tools' kept output (``rawlog``), the interference watch's flagging rule
(``interference``) and the WAN calibration's dataset names (``calibration``). Collection writes
with it, analysis reads with it; it imports neither."""
